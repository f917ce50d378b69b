// The recached dashboard: listens on the bridge's /dashboard/live
// WebSocket, which sends the engine's figures once a second as JSON, and
// fills in the DOM. Plain script, no build step.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const history = [];
  let prev = null; // the previous snapshot, for commands per second

  // window.dashboard is read by the end-to-end test and by curious people.
  const state = { updates: 0, last: null };
  window.dashboard = state;

  function human(n) {
    if (n >= 1 << 30) return (n / (1 << 30)).toFixed(2) + ' GB';
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(2) + ' MB';
    if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + ' KB';
    return n + ' B';
  }

  function setRows(tbody, rows) {
    tbody.replaceChildren(...rows.map((cells) => {
      const tr = document.createElement('tr');
      for (const c of cells) {
        const td = document.createElement('td');
        td.textContent = c;
        tr.append(td);
      }
      return tr;
    }));
  }

  function render(s) {
    $('version').textContent = 'version ' + s.version;
    const clients = Object.values(s.clients).reduce((a, b) => a + b, 0);
    $('clients').textContent = clients;
    $('wsconns').textContent = s.clients.websocket || 0;
    if (prev && s.timeMs > prev.timeMs) {
      const rate = Math.max(0, (s.totalCommands - prev.totalCommands) * 1000 / (s.timeMs - prev.timeMs));
      $('ops').textContent = rate.toFixed(0);
      history.push(rate);
      if (history.length > 60) history.shift();
      const top = Math.max(1, ...history);
      $('sparkline').setAttribute('points', history.map((v, i) => (i * 10) + ',' + (78 - 76 * v / top).toFixed(1)).join(' '));
    }
    prev = s;
    $('memory').textContent = human(s.usedMemory);
    $('rss').textContent = human(s.rss);
    $('evicted').textContent = s.evictedKeys;
    $('keys').textContent = s.dbs.reduce((a, d) => a + d.keys, 0);
    setRows($('keyspace').tBodies[0], s.dbs.map((d) => ['db' + d.index, d.keys, d.expires]));
    const us = (v) => v.toFixed(3);
    setRows($('latency').tBodies[0], s.commands.filter((c) => c.p50 > 0)
      .map((c) => [c.name, c.calls, us(c.p50), us(c.p99), us(c.p999)]));
    setRows($('transports').tBodies[0], Object.keys(s.clients).sort().map((t) => [t, s.clients[t]]));
    setRows($('sync').tBodies[0], s.sync.map((c) => [c.id, c.addr, c.transport, c.ageSec,
      c.patterns ? c.patterns.join(' ') : 'unscoped: every key']));
    $('pushes').textContent = s.syncPushes;
    $('channels').textContent = s.pubsubChannels;
  }

  function connect() {
    const sock = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/dashboard/live');
    sock.onopen = () => {
      $('status').textContent = 'live';
      $('status').className = 'status live';
    };
    sock.onmessage = (ev) => {
      const s = JSON.parse(ev.data);
      render(s);
      state.last = s;
      state.updates++;
    };
    sock.onclose = () => {
      $('status').textContent = 'disconnected, retrying';
      $('status').className = 'status down';
      setTimeout(connect, 2000);
    };
  }

  connect();
})();

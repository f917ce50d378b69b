import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IDBStorage, MemoryStorage, openDatabase, STORES, SCHEMA_VERSION } from '../recached-edge.js';
import { FakeIndexedDB } from '../testdata/fakes.js';

/** Creates a database as an older or newer client left it. */
function preexisting(idb, name, version, stores, rows = {}) {
  return new Promise((resolve, reject) => {
    const req = idb.open(name, version);
    req.onupgradeneeded = () => {
      for (const s of stores) req.result.createObjectStore(s.name, { keyPath: s.keyPath });
    };
    req.onsuccess = () => {
      const db = req.result;
      const names = Object.keys(rows);
      if (names.length === 0) {
        db.close();
        resolve(undefined);
        return;
      }
      const tx = db.transaction(names, 'readwrite');
      for (const n of names) for (const r of rows[n]) tx.objectStore(n).put(r);
      tx.oncomplete = () => {
        db.close();
        resolve(undefined);
      };
    };
    req.onerror = () => reject(req.error);
  });
}

test('a new database gets every store at the schema version', async () => {
  const idb = new FakeIndexedDB();
  const db = await openDatabase(idb, 'n');
  assert.equal(db.version, SCHEMA_VERSION);
  for (const s of STORES) assert.ok(db.objectStoreNames.contains(s.name), s.name);
  db.close();
  // Opening again changes nothing.
  const again = await openDatabase(idb, 'n');
  assert.equal(again.version, SCHEMA_VERSION);
  assert.deepEqual(idb.state('n').created, STORES.map((s) => s.name));
  again.close();
});

test('an upgrade creates only the missing stores and keeps their data', async () => {
  const idb = new FakeIndexedDB();
  await preexisting(idb, 'old', 1, [{ name: 'identity', keyPath: 'slot' }], {
    identity: [{ slot: 0, clientId: 'abc', epoch: 7 }],
  });
  const st = await IDBStorage.open(idb, 'old');
  assert.equal(st.db.version, 2);
  assert.ok(st.db.objectStoreNames.contains('outbox'));
  assert.deepEqual(idb.state('old').created, ['identity', 'outbox']);
  assert.deepEqual(idb.state('old').deleted, []);
  const id = await st.claim(0, () => 'never');
  assert.deepEqual(id, { slot: 0, clientId: 'abc', epoch: 8 });
  st.close();
});

test('a database a newer client upgraded opens as it is, its extra stores kept', async () => {
  const idb = new FakeIndexedDB();
  await preexisting(idb, 'new', 5, [...STORES, { name: 'future', keyPath: 'id' }], { future: [{ id: 1 }] });
  const st = await IDBStorage.open(idb, 'new');
  assert.equal(st.db.version, 5);
  assert.ok(st.db.objectStoreNames.contains('future'));
  assert.deepEqual(idb.state('new').deleted, []);
  assert.equal(idb.state('new').stores.get('future').rows.size, 1);
  st.close();
});

test('a newer database missing one of our stores gets it one version up', async () => {
  const idb = new FakeIndexedDB();
  await preexisting(idb, 'odd', 3, [{ name: 'outbox', keyPath: 'key' }, { name: 'future', keyPath: 'id' }]);
  const st = await IDBStorage.open(idb, 'odd');
  assert.equal(st.db.version, 4);
  for (const n of ['identity', 'outbox', 'future']) assert.ok(st.db.objectStoreNames.contains(n), n);
  assert.deepEqual(idb.state('odd').deleted, []);
  st.close();
});

test('claim bumps the epoch per session and keeps the client id per slot', async () => {
  for (const make of [async () => IDBStorage.open(new FakeIndexedDB(), 'c'), async () => new MemoryStorage()]) {
    const st = await make();
    let n = 0;
    const newId = () => `id-${n++}`;
    assert.deepEqual(await st.claim(0, newId), { slot: 0, clientId: 'id-0', epoch: 1 });
    assert.deepEqual(await st.claim(0, newId), { slot: 0, clientId: 'id-0', epoch: 2 });
    assert.deepEqual(await st.claim(1, newId), { slot: 1, clientId: 'id-1', epoch: 1 });
    assert.deepEqual(await st.identity(0), { slot: 0, clientId: 'id-0', epoch: 2 });
    assert.equal(await st.identity(9), undefined);
    st.close();
  }
});

test('saved writes come back in key order; deletions remove them', async () => {
  for (const make of [async () => IDBStorage.open(new FakeIndexedDB(), 'w'), async () => new MemoryStorage()]) {
    const st = await make();
    const w = (slot, epoch, counter) => ({ key: [slot, epoch, counter], clientId: 'c', id: String(epoch * 2 ** 32 + counter), args: ['INCR', 'n'] });
    const all = [w(0, 2, 1), w(0, 1, 10), w(1, 1, 1), w(0, 1, 2)];
    await st.save(all.map((x) => ({ key: x.key, write: x })));
    assert.deepEqual((await st.writes()).map((x) => x.key), [[0, 1, 2], [0, 1, 10], [0, 2, 1], [1, 1, 1]]);
    await st.save([{ key: [0, 1, 10], write: null }]);
    assert.deepEqual((await st.writes()).map((x) => x.key), [[0, 1, 2], [0, 2, 1], [1, 1, 1]]);
    st.close();
  }
});

test('another tab upgrading the schema closes the database; the next use reopens it', async () => {
  const idb = new FakeIndexedDB();
  const st = await IDBStorage.open(idb, 'v');
  await st.claim(0, () => 'x');
  // Another tab opens a newer version: ours is asked to close and does.
  const other = await new Promise((resolve, reject) => {
    const req = idb.open('v', SCHEMA_VERSION + 1);
    req.onupgradeneeded = () => req.result.createObjectStore('later', { keyPath: 'id' });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error('blocked'));
  });
  other.close();
  assert.equal(st.db, null);
  assert.deepEqual(await st.claim(0, () => 'y'), { slot: 0, clientId: 'x', epoch: 2 });
  assert.ok(st.db.objectStoreNames.contains('later'));
  st.close();
});

#!/usr/bin/env bash
# Installs the Debian packages the tests and benchmarks need, when missing:
# redis-server and redis-tools (the reference for differential tests and
# benchmarks), chromium (browser end-to-end tests) and nodejs (the browser
# module's unit tests). Safe to run repeatedly.
set -euo pipefail

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-benchmark >/dev/null 2>&1 || need+=(redis-tools)
command -v chromium >/dev/null 2>&1 || need+=(chromium) # sync/web's browser end-to-end tests
command -v node >/dev/null 2>&1 || need+=(nodejs)    # sync/web unit tests (node --test)

if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
echo "installing: ${need[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
# Debian's package may start a system redis on 6379; recached wants that port.
if command -v service >/dev/null 2>&1; then
	$sudo service redis-server stop >/dev/null 2>&1 || true
fi

#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian machine (as root), then run
# ruff, mypy and pytest. Usage: bash .ci/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
[ -e /usr/lib/nginx/modules/ngx_http_echo_module.so ] || need_apt+=(nginx libnginx-mod-http-echo)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need_apt+=(python3-venv python3-pip)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${need_apt[*]} (run as root, or: sudo apt-get install ${need_apt[*]})" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" fonts-dejavu-core >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
echo "== installing Python dependencies into .venv"
if ! { .venv/bin/python -m pip install --upgrade pip && .venv/bin/python -m pip install -e '.[test,browser]'; } >.venv/pip.log 2>&1; then
  cat .venv/pip.log >&2
  exit 1
fi

export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff"
ruff check archiver plugins tests bench
ruff format --check archiver plugins tests bench
echo "== mypy"
mypy archiver plugins
echo "== pytest"
status=0
python -m pytest -p no:cacheprovider "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests" >&2
  exit 1
fi
exit "$status"

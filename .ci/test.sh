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
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
command -v wget >/dev/null 2>&1 || need_apt+=(wget)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# The offline readers' tools of the ZIM and EPUB export tests (tests/offline_tools.py).
command -v zimcheck >/dev/null 2>&1 || need_apt+=(zim-tools)
command -v kiwix-serve >/dev/null 2>&1 || need_apt+=(kiwix-tools)
[ -e /usr/share/java/epubcheck.jar ] || need_apt+=(epubcheck)
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
# The distribution was called `archiver` before (a name the package index gives another project):
# a .venv made then still holds it, and its entry points would load every plugin twice.
if .venv/bin/python -m pip show -q archiver >/dev/null 2>&1; then
  .venv/bin/python -m pip uninstall -y -q archiver >/dev/null
  rm -rf archiver.egg-info
fi
if ! { .venv/bin/python -m pip install --upgrade pip && .venv/bin/python -m pip install -e '.[test,browser,zim]'; } >.venv/pip.log 2>&1; then
  cat .venv/pip.log >&2
  exit 1
fi

# The real replay clients of the interop tests (tests/test_interop_*.py), pinned.
# ReplayWeb.page: only its built ui.js and sw.js are needed, taken from the npm package.
REPLAYWEB_VERSION=2.5.3
if ! grep -qs "\"version\": \"$REPLAYWEB_VERSION\"" .ci/node/replaywebpage/package.json; then
  echo "== fetching replaywebpage $REPLAYWEB_VERSION"
  rm -rf .ci/node/replaywebpage
  mkdir -p .ci/node/replaywebpage
  (cd .ci/node && npm pack --silent "replaywebpage@$REPLAYWEB_VERSION" >/dev/null \
    && tar xzf "replaywebpage-$REPLAYWEB_VERSION.tgz" -C replaywebpage --strip-components=1 \
      package/ui.js package/sw.js package/package.json \
    && rm "replaywebpage-$REPLAYWEB_VERSION.tgz")
fi
# pywb gets its own virtual environment: its brotlipy would break brotli in .venv.
PYWB_VERSION=2.10.0
if ! .ci/pywb-venv/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('pywb') != '$PYWB_VERSION')" 2>/dev/null; then
  echo "== installing pywb $PYWB_VERSION into .ci/pywb-venv"
  rm -rf .ci/pywb-venv
  python3 -m venv .ci/pywb-venv
  if ! .ci/pywb-venv/bin/python -m pip install "pywb==$PYWB_VERSION" >.ci/pywb-venv/pip.log 2>&1; then
    cat .ci/pywb-venv/pip.log >&2
    exit 1
  fi
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

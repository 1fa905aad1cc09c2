# shellcheck shell=bash
# Shared helpers of scripts/up, scripts/down and scripts/psql. Source it:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# It locates the repository from its own path, so the scripts work from any
# working directory.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
STACK_DIR="${NOETL_STACK_DIR:-$REPO_ROOT/.stack}"
case "$STACK_DIR" in /*) ;; *) STACK_DIR="$REPO_ROOT/$STACK_DIR" ;; esac
STACK_BIN="$STACK_DIR/bin"
STACK_LOG="$STACK_DIR/logs/stack.log"
export NOETL_REPO_ROOT="$REPO_ROOT" NOETL_STACK_DIR="$STACK_DIR"

say() { printf '%s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# load_env sources .stack/env (written by the supervisor) if it exists.
load_env() {
  if [ -f "$STACK_DIR/env" ]; then
    # shellcheck disable=SC1091
    . "$STACK_DIR/env"
  fi
}

# supervisor_pid prints the pid of this stack's running supervisor, if any.
supervisor_pid() {
  local pid
  pid="$(cat "$STACK_DIR/stack.pid" 2>/dev/null || true)"
  [ -n "$pid" ] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: it must be our binary.
  local argv0
  argv0="$({ tr '\0' '\n' <"/proc/$pid/cmdline"; } 2>/dev/null | head -n 1)"
  [ "${argv0##*/}" = stack ] || return 1
  printf '%s\n' "$pid"
}

# http_ok URL succeeds if URL answers 2xx within 2 seconds.
http_ok() {
  curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null
}

# stack_is_up succeeds if the supervisor runs, the stack is ready and the
# functions server answers.
# soak_owner prints the pid of a scripts/soak that owns the stack (its
# .stack/soak.pid, while that process lives; not this shell's own soak:
# NOETL_SOAK_PID), nothing otherwise. A stack a soak runs on is not to be
# restarted under it by scripts/up (scripts/bench, a test run): the soak
# would count the restart's lost executions as its own failures.
soak_owner() {
  local pid
  pid="$(cat "$STACK_DIR/soak.pid" 2>/dev/null || true)"
  [ -n "$pid" ] && [ "$pid" != "${NOETL_SOAK_PID:-}" ] && kill -0 "$pid" 2>/dev/null && printf '%s\n' "$pid"
  return 0
}

stack_is_up() {
  supervisor_pid >/dev/null || return 1
  [ -f "$STACK_DIR/ready" ] || return 1
  (
    load_env
    http_ok "${NOETL_FUNCTIONS_URL:-http://127.0.0.1:8680}/api/healthz"
  )
}

# build_binaries builds the supervisor, the functions server and the runner
# into .stack/bin (go build is incremental; the runner with cgo, for
# DuckDB). NOETL_FUNCTIONS_BIN and NOETL_RUNNER_BIN, when set, name binaries
# to use instead of building them.
build_binaries() {
  mkdir -p "$STACK_BIN"
  say "building .stack/bin/stack (go build ./emulators/cmd/stack)"
  (cd "$REPO_ROOT" && go build -o "$STACK_BIN/stack" ./emulators/cmd/stack) ||
    die "go build ./emulators/cmd/stack failed"
  if [ -n "${NOETL_FUNCTIONS_BIN:-}" ]; then
    [ -x "$NOETL_FUNCTIONS_BIN" ] || die "NOETL_FUNCTIONS_BIN=$NOETL_FUNCTIONS_BIN is not an executable"
    say "using functions server $NOETL_FUNCTIONS_BIN (NOETL_FUNCTIONS_BIN)"
  else
    say "building .stack/bin/functions (go build ./cmd/local)"
    (cd "$REPO_ROOT" && go build -o "$STACK_BIN/functions" ./cmd/local) ||
      die "go build ./cmd/local failed"
  fi
  if [ -n "${NOETL_RUNNER_BIN:-}" ]; then
    [ -x "$NOETL_RUNNER_BIN" ] || die "NOETL_RUNNER_BIN=$NOETL_RUNNER_BIN is not an executable"
    say "using runner $NOETL_RUNNER_BIN (NOETL_RUNNER_BIN)"
  else
    say "building .stack/bin/runner (CGO_ENABLED=1 go build ./runner)"
    (cd "$REPO_ROOT" && CGO_ENABLED=1 go build -o "$STACK_BIN/runner" ./runner) ||
      die "go build ./runner failed"
  fi
}

# gcloud_sdk_root prints the Cloud SDK installation directory.
gcloud_sdk_root() {
  local g
  g="$(command -v "${NOETL_GCLOUD:-gcloud}")" || return 1
  g="$(readlink -f "$g")"
  dirname "$(dirname "$g")"
}

# pg_bin_dir prints the directory holding initdb and pg_ctl.
pg_bin_dir() {
  if [ -n "${NOETL_PG_BIN:-}" ]; then
    printf '%s\n' "$NOETL_PG_BIN"
    return
  fi
  local p
  if p="$(command -v initdb)"; then
    dirname "$(readlink -f "$p")"
    return
  fi
  p="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n | tail -n 1)"
  [ -n "$p" ] && [ -x "$p/initdb" ] && printf '%s\n' "$p"
}

# install_debian_prerequisites installs, as root with apt-get available,
# the Debian packages of missing prerequisites that Debian ships (curl, a
# Java runtime, the PostgreSQL server and client, iso-codes, and the
# PostgreSQL drivers NoETL's python tasks import: python3-psycopg2 and
# python3-psycopg, for /usr/bin/python3, the interpreter python tasks use
# when NOETL_PYTHON is unset), and chromium (the console's browser tests
# and scripts/console-shots drive it headless). The gcloud emulators come
# from Google's own apt repository and are only reported. NOETL_NO_INSTALL=1
# turns this off.
install_debian_prerequisites() {
  [ "${NOETL_NO_INSTALL:-0}" = 1 ] && return 0
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 0
  local pkgs=()
  command -v curl >/dev/null 2>&1 || pkgs+=(curl)
  command -v java >/dev/null 2>&1 || pkgs+=(openjdk-17-jre-headless)
  { [ -n "$(pg_bin_dir)" ] && [ -x "$(pg_bin_dir)/initdb" ]; } || pkgs+=(postgresql-15)
  command -v psql >/dev/null 2>&1 || pkgs+=(postgresql-client)
  [ -f "${NOETL_ISO_CODES_DIR:-/usr/share/iso-codes/json}/iso_3166-2.json" ] || pkgs+=(iso-codes)
  # The runner's packages (python3 and the libraries NoETL's python tasks
  # import): runner/packages.txt, the list the runner's image installs too.
  local p
  while read -r p; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || pkgs+=("$p")
  done < <(runner_packages)
  command -v "${NOETL_CHROMIUM:-chromium}" >/dev/null 2>&1 || pkgs+=(chromium)
  # npm installs the independent Arrow implementation of the result
  # tier's interoperability test (emulators/arrowjs; scripts/test).
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
  [ "${#pkgs[@]}" = 0 ] && return 0
  echo "installing missing prerequisites: ${pkgs[*]}"
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null 2>&1 ||
    echo "warning: apt-get install ${pkgs[*]} failed" >&2
}

# runner_packages prints the Debian packages of runner/packages.txt (one
# per line; blank lines and # comments skipped): the one list of what the
# runner needs installed, read here and by runner/Dockerfile.
runner_packages() {
  sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$REPO_ROOT/runner/packages.txt"
}

# check_prerequisites prints every missing tool with how to install it and
# fails if anything is missing.
check_prerequisites() {
  install_debian_prerequisites
  local missing=0 sdk
  need() { # need TEST MESSAGE
    if ! eval "$1" >/dev/null 2>&1; then
      printf 'missing: %s\n' "$2" >&2
      missing=1
    fi
  }
  need 'command -v go' "the Go toolchain (go >= 1.26): https://go.dev/doc/install"
  need 'command -v curl' "curl: sudo apt-get install curl"
  need 'command -v java' "a Java runtime (>= 11) for the Pub/Sub and Firestore emulators: sudo apt-get install openjdk-17-jre-headless"
  if command -v "${NOETL_GCLOUD:-gcloud}" >/dev/null 2>&1; then
    sdk="$(gcloud_sdk_root)"
    need "[ -d '$sdk/platform/pubsub-emulator' ]" "the Pub/Sub emulator: sudo apt-get install google-cloud-cli-pubsub-emulator (or: gcloud components install pubsub-emulator beta)"
    need "[ -d '$sdk/platform/cloud-firestore-emulator' ]" "the Firestore emulator: sudo apt-get install google-cloud-cli-firestore-emulator (or: gcloud components install cloud-firestore-emulator)"
  else
    printf 'missing: %s\n' "the gcloud CLI: sudo apt-get install google-cloud-cli google-cloud-cli-pubsub-emulator google-cloud-cli-firestore-emulator (apt repository https://packages.cloud.google.com/apt, see https://cloud.google.com/sdk/docs/install#deb)" >&2
    missing=1
  fi
  need '[ -n "$(pg_bin_dir)" ] && [ -x "$(pg_bin_dir)/initdb" ] && [ -x "$(pg_bin_dir)/pg_ctl" ]' "the PostgreSQL server (initdb, pg_ctl): sudo apt-get install postgresql-15 (or set NOETL_PG_BIN)"
  need 'command -v psql' "the PostgreSQL client: sudo apt-get install postgresql-client"
  need "[ -f '${NOETL_ISO_CODES_DIR:-/usr/share/iso-codes/json}/iso_3166-2.json' ]" "ISO 3166 data for the countries fixture: sudo apt-get install iso-codes (or set NOETL_ISO_CODES_DIR)"
  unset -f need
  if ! command -v "${NOETL_CHROMIUM:-chromium}" >/dev/null 2>&1; then
    printf 'note: no chromium: the stack runs, but the console browser tests (scripts/test) and scripts/console-shots need it: sudo apt-get install chromium (or set NOETL_CHROMIUM)\n' >&2
  fi
  [ "$missing" = 0 ] || die "install the missing prerequisites above and run scripts/up again"
}

# print_endpoints prints where everything listens.
print_endpoints() {
  (
    load_env
    cat <<EOF
Endpoints (project ${GOOGLE_CLOUD_PROJECT}, location ${NOETL_LOCATION}):
  Pub/Sub      PUBSUB_EMULATOR_HOST=${PUBSUB_EMULATOR_HOST}   topics events, commands (+ -dead)
  Firestore    FIRESTORE_EMULATOR_HOST=${FIRESTORE_EMULATOR_HOST}
  GCS          STORAGE_EMULATOR_HOST=${STORAGE_EMULATOR_HOST}   bucket ${NOETL_RESULTS_BUCKET}
  Cloud Tasks  CLOUDTASKS_EMULATOR_HOST=${CLOUDTASKS_EMULATOR_HOST}   queues work, timers
  Fixtures     ${NOETL_FIXTURES_URL}
  PostgreSQL   ${NOETL_PG_DSN}   (scripts/psql)
  NATS         NATS_URL=${NATS_URL}   (JetStream)
  User data    GCS ${NOETL_DATA_GCS_URL:-}   Pub/Sub ${NOETL_DATA_PUBSUB_HOST:-}   (what tasks may reach; not the engine's)
               Kafka ${NOETL_KAFKA_BROKERS:-}   S3 ${NOETL_S3_URL:-}   (any access key; buckets: curl -X PUT ${NOETL_S3_URL:-}/NAME)
  Runner       ${NOETL_RUNNER_URL:-}   (python, shell, duckdb, postgres, transfer, gcs, s3, nats, subscription; log .stack/logs/runner.log)
  Functions    ${NOETL_FUNCTIONS_URL}   (/api/, /emit, /execute; /route, /materialize, /dispatch via push; /subscribe (registered subscriptions); /metrics; traces in ${NOETL_TRACE_DIR})
  Egress       user code may reach ${NOETL_EGRESS_ALLOW:-}   (scripts/up --allow HOST:PORT adds yours); never ${NOETL_EGRESS_DENY:-} (the engine's own)
API token    NOETL_API_TOKEN=${NOETL_API_TOKEN:-}   (Authorization: Bearer; scripts/noetl sends it)
Environment: . ${STACK_DIR}/env     Logs: ${STACK_DIR}/logs/     Stop: scripts/down
EOF
  )
}

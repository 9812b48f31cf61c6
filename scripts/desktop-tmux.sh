#!/usr/bin/env bash
# desktop-tmux.sh — two qim-desktop processes exchange messages in tmux against a fresh deployment.
#
# Builds qimctl, qim-desktop and the devdeploy helper; starts a throwaway deployment (process stack
# + every qim service on free loopback ports, cmd/qim-desktop/devdeploy); mints two dev tokens with
# `qimctl token issue`; runs alice and bob in two windows of a private tmux server; drives them with
# send-keys (/login, /msg both ways, /history, /convs, /quit) and checks the captured panes,
# including that each process exits by itself within 5 s of /quit while its terminal stays open.
# Tears everything down on exit and exits non-zero on any failure.
#
#   scripts/desktop-tmux.sh            # from the repository root or anywhere
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$(mktemp -d "${TMPDIR:-/tmp}/qim-desktop-tmux.XXXXXX")
SOCK="qimdesk-$$"
DEPLOY_PID=""

log() { printf 'desktop-tmux: %s\n' "$*" >&2; }

cleanup() {
  local rc=$?
  tmux -L "$SOCK" kill-server >/dev/null 2>&1 || true
  if [[ -n "$DEPLOY_PID" ]] && kill -0 "$DEPLOY_PID" 2>/dev/null; then
    kill -TERM "$DEPLOY_PID" 2>/dev/null || true
    wait "$DEPLOY_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

capture() { tmux -L "$SOCK" capture-pane -p -J -S -500 -t "desk:$1" > "$WORK/pane-$1.txt" 2>/dev/null || true; }

fail() {
  log "FAIL: $*"
  for w in alice bob; do
    capture "$w"
    log "---- pane $w ----"
    cat "$WORK/pane-$w.txt" >&2 || true
  done
  log "---- deployment log (tail) ----"
  tail -n 30 "$WORK/deploy.log" >&2 || true
  exit 1
}

# wait_for WINDOW TEXT SECONDS: until the window's pane contains TEXT (fixed string).
wait_for() {
  local deadline=$((SECONDS + $3))
  while ((SECONDS < deadline)); do
    capture "$1"
    grep -qF -- "$2" "$WORK/pane-$1.txt" && return 0
    sleep 0.2
  done
  fail "window $1 never showed: $2"
}

type_line() { # type_line WINDOW TEXT: literal keys, then Enter
  tmux -L "$SOCK" send-keys -t "desk:$1" -l -- "$2"
  tmux -L "$SOCK" send-keys -t "desk:$1" Enter
}

if ! command -v tmux >/dev/null 2>&1; then
  log "installing tmux"
  (apt-get install -y tmux >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y tmux >/dev/null; }) ||
    fail "tmux is not installed and could not be installed"
fi

log "building"
mkdir -p "$WORK/bin"
go build -o "$WORK/bin/" ./cmd/qimctl ./cmd/qim-desktop ./cmd/qim-desktop/devdeploy || fail "build"

log "starting a deployment (stack + services; a minute on a small machine)"
"$WORK/bin/devdeploy" --env-file "$WORK/deploy.env" --root "$ROOT" >"$WORK/deploy.log" 2>&1 &
DEPLOY_PID=$!
deadline=$((SECONDS + 600))
until [[ -s "$WORK/deploy.env" ]]; do
  kill -0 "$DEPLOY_PID" 2>/dev/null || { DEPLOY_PID=""; fail "deployment exited before it was ready"; }
  ((SECONDS < deadline)) || fail "deployment not ready within 600 s"
  sleep 1
done
# shellcheck disable=SC1091
source "$WORK/deploy.env" # QIM_GATEWAY, QIM_TOKEN_SECRET

ALICE=$(((RANDOM << 15 | RANDOM) + 1000000))
BOB=$((ALICE + 1))
NONCE="$$-$RANDOM"
for who in alice:$ALICE:desk-a bob:$BOB:desk-b; do
  IFS=: read -r name user device <<<"$who"
  (umask 077 && QIM_TOKEN_SECRET="$QIM_TOKEN_SECRET" "$WORK/bin/qimctl" token issue --user "$user" --device "$device" \
    >"$WORK/token-$name") || fail "token for $name"
done

# Each pane runs the client, then prints its exit status and stays open: "[exited 0]" appearing
# proves the process ended by itself while its terminal (stdin) was still there.
desk() { # desk NAME USER DEVICE
  printf "'%s' --gateway '%s' --user %s --device %s --token-file '%s' --data-dir '%s'; echo \"[exited \$?]\"; sleep 3600" \
    "$WORK/bin/qim-desktop" "$QIM_GATEWAY" "$2" "$3" "$WORK/token-$1" "$WORK/data-$1"
}
tmux -L "$SOCK" -f /dev/null new-session -d -s desk -n alice -x 200 -y 60 "$(desk alice "$ALICE" desk-a)"
tmux -L "$SOCK" new-window -d -t desk -n bob "$(desk bob "$BOB" desk-b)"

wait_for alice "type /login" 30
wait_for bob "type /login" 30
type_line alice "/login"
type_line bob "/login"
wait_for alice "[synced]" 60
wait_for bob "[synced]" 60

log "alice -> bob"
type_line alice "/msg $BOB hello-bob-$NONCE"
wait_for alice "[delivered]" 30
wait_for bob "[msg] from $ALICE: hello-bob-$NONCE" 30

log "bob -> alice"
type_line bob "/msg $ALICE hi-alice-$NONCE"
wait_for bob "[delivered]" 30
wait_for alice "[msg] from $BOB: hi-alice-$NONCE" 30

type_line alice "/history $BOB"
wait_for alice "history with $BOB (server, 2 messages)" 30
wait_for alice "you: hello-bob-$NONCE" 5
# Unread follows the one definition: bob's own reply (#2) read everything before it; alice has
# bob's reply unread.
type_line bob "/convs"
wait_for bob "with $ALICE: latest #2, unread 0" 10
type_line alice "/convs"
wait_for alice "with $BOB: latest #2, unread 1" 10
type_line bob "/pending"
wait_for bob "0 pending" 10

log "quitting"
type_line alice "/quit"
type_line bob "/quit"
wait_for alice "[exited 0]" 5
wait_for bob "[exited 0]" 5
capture alice
capture bob
if grep -q "\[msg\] from $ALICE: hello-bob-$NONCE" "$WORK/pane-alice.txt"; then fail "alice saw her own message as incoming"; fi
if (($(grep -cF "hello-bob-$NONCE" "$WORK/pane-bob.txt") != 1)); then fail "bob's pane shows the message more than once"; fi
log "PASS: two qim-desktop processes exchanged messages and exited on /quit"

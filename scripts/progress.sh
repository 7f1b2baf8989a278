# Progress lines for long shell steps; sourced by scripts/setup.sh and .ci/run.
#
#   step LABEL COMMAND...   run COMMAND with its output kept in a temporary log, printing
#                           "[TAG   Ns] LABEL ..." as it starts, "[TAG   Ns]   still LABEL (N s): <what pip
#                           is on>" every $PROGRESS_EVERY seconds (default 15) while it runs, and
#                           "[TAG   Ns]   LABEL: done in N s" when it ends. On failure: the command's
#                           whole output, then its exit status (the script stops under set -e).
#   say TEXT                print "[TAG   Ns] TEXT".
#
# TAG is $PROGRESS_TAG (default: setup); N is seconds since this file was sourced. Every line goes to
# stderr at once, one line per event (no carriage returns), so a terminal and a CI log read the same.

: "${PROGRESS_TAG:=setup}"
_progress_started=$SECONDS

say() { printf '[%s %4ds] %s\n' "$PROGRESS_TAG" "$((SECONDS - _progress_started))" "$*" >&2; }

step() {
  local label=$1
  shift
  local log t0=$SECONDS last=$SECONDS every=${PROGRESS_EVERY:-15} status=0 pid doing
  log=$(mktemp "${TMPDIR:-/tmp}/step.XXXXXX")
  say "$label ..."
  "$@" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.5
    if (( SECONDS - last >= every )) && kill -0 "$pid" 2>/dev/null; then
      last=$SECONDS
      doing=$(grep -E '^ *(Collecting|Downloading|Processing|Obtaining|Preparing|Building|Installing|Successfully)' "$log" \
        | tail -n 1 | sed -e 's/^ *//' | cut -c1-110 || true)
      say "  still $label ($((SECONDS - t0)) s)${doing:+: $doing}"
    fi
  done
  wait "$pid" || status=$?
  if (( status != 0 )); then
    say "FAILED: $label (exit status $status after $((SECONDS - t0)) s); its output:"
    cat "$log" >&2
    rm -f "$log"
    return "$status"
  fi
  rm -f "$log"
  say "  $label: done in $((SECONDS - t0)) s"
}

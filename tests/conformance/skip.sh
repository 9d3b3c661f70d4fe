# Sourced by the conformance scripts: `skip_leg REASON` ends a script that cannot run here.
# Under CI=true a missing prerequisite is a failure (exit 1); otherwise the script prints
# `SKIPPED - REASON`, writes REASON to $CONFORMANCE_SKIPPED when set (run_all.sh reads it, to
# report the leg as skipped rather than ok), and exits 0.
skip_leg() {
  if [ "${CI:-}" = "true" ]; then
    echo "conformance: $1; required under CI=true" >&2
    exit 1
  fi
  echo "conformance: SKIPPED - $1"
  if [ -n "${CONFORMANCE_SKIPPED:-}" ]; then printf '%s\n' "$1" >"$CONFORMANCE_SKIPPED"; fi
  exit 0
}

# Shared by the Table 6 scripts (sourced). wait_all: wait for every background job of the calling shell and
# fail (naming how many) when any of them failed; a bare `wait` returns 0 even when trainings crashed.
wait_all() {
  local pid failed=0
  for pid in $(jobs -p); do wait "$pid" || failed=$((failed + 1)); done
  if ((failed)); then
    echo "$failed background job(s) failed; see the *.train.log files; nothing is evaluated or rendered" >&2
    return 1
  fi
}

# Sourced by the shell tests of kernels/mla_decode: check DESCRIPTION COMMAND... counts a
# passing or failing check (a failing one is printed), $tmp is a scratch folder removed on exit,
# and checks_done prints the counts and fails when any check failed.
fail=0
pass=0
check() {
  local what="$1"; shift
  if "$@"; then pass=$((pass + 1)); else echo "FAILED: $what"; fail=$((fail + 1)); fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks_done() {
  echo "$pass checks passed, $fail failed"
  test "$fail" -eq 0
}

#!/usr/bin/env bash
# Ten consecutive .ci/run passes on clean clones of one commit, with a
# bounded CPU-bound job on one core beside them (issue 26's proof).
commit=$1
out=/work/ciloop/$commit
mkdir -p "$out"
timeout 14400 sh -c 'while :; do :; done' &
load=$!
echo "load pid $load (one core, bounded by timeout 4h); started $(date -u +%FT%TZ)" > "$out/summary.txt"
for i in $(seq 1 10); do
  d=/tmp/ciloop-$i
  rm -rf "$d" && git clone -q /work/main "$d" && git -C "$d" checkout -q "$commit"
  t0=$SECONDS
  (cd "$d" && CI=true bash .ci/run > "$out/run$i.log" 2>&1)
  rc=$?
  echo "run $i: exit $rc, $((SECONDS - t0)) s, $(date -u +%FT%TZ); steps: $(grep '^ci: step' "$out/run$i.log" | sed 's/ci: step //; s/ took / /; s/ s (total.*//' | tr '\n' ';')" >> "$out/summary.txt"
  rm -rf "$d"
  [ $rc -eq 0 ] || break
done
kill $load
echo "done $(date -u +%FT%TZ)" >> "$out/summary.txt"

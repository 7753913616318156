#!/bin/sh
# speed.sh runs the emulator's speed benchmarks once and prints the table
# README.md shows under "Emulator speed": every figure next to its
# baselines measured in the same run (interleaved, iteration by iteration),
# and the machine it ran on. Run it from anywhere in the repository:
#
#	emu/speed.sh        # GEMM, in-process all-reduce, training
#	emu/speed.sh -mpi   # and the all-reduce over 2 MPI ranks (build tag mpi, Open MPI's mpirun)
#
# The MPI ranks run unbound (--bind-to none), so that rank 0's in-process
# all-reduce, the baseline, has both cores as the emulator has in one
# process.
#
# As root, mpirun also needs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.
set -eu
cd "$(dirname "$0")/.."
n=10 # iterations of each benchmark: a count, not a duration
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -run '^$' -bench 'GEMM' -benchtime ${n}x ./emu/kernel >"$tmp/emu.txt"
go test -run '^$' -bench 'AllReduce' -benchtime ${n}x ./emu/fabric >>"$tmp/emu.txt"
# an iteration of training is three runs of the default `shardlab run`'s
# 30 steps (about 5 s): 3 of them
go test -run '^$' -bench 'Train$' -benchtime 3x ./emu >>"$tmp/emu.txt"
if [ "${1:-}" = -mpi ]; then
	go test -c -tags mpi -o "$tmp/mpi.test" ./emu/mpi
	# each rank's output to its own file (on one stream, two ranks' lines
	# can interleave); rank 0 reports the ratios
	mpirun --oversubscribe --bind-to none -np 2 --output-filename "$tmp/ranks" "$tmp/mpi.test" -test.run '^$' -test.bench Allreduce -test.benchtime ${n}x >/dev/null
	cat "$tmp"/ranks/*/rank.0/stdout >"$tmp/mpi.txt"
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
simd=$(grep -o -w -E 'avx512f|avx2|fma' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "Machine: $cpu, $(nproc) CPUs ($simd), $(go version | cut -d' ' -f3), $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)"
echo
echo '| measurement | figure | against baselines measured in the same run |'
echo '|---|---|---|'
cat "$tmp/emu.txt" "$tmp/mpi.txt" 2>/dev/null | awk '
function f(x) { return sprintf(x >= 100 ? "%.0f" : (x >= 10 ? "%.1f" : "%.2f"), x) }
/^Benchmark/ {
	name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
	delete m
	for (i = 5; i < NF; i += 2) m[$(i + 1)] = $i
	if (name ~ /^GEMM\//) {
		sub(/^GEMM\//, "", name)
		base = "×" f(m["x-v1"]) " the v1 kernel"
		if ("x-avx2" in m) base = base ", ×" f(m["x-avx2"]) " the AVX2 micro-kernel"
		if ("%-peak" in m) base = base "; " f(m["%-peak"]) " % of an FMA loop'"'"'s " f(m["peak-GFLOP/s"]) " GFLOP/s"
		printf "| GEMM %s | %s GFLOP/s, %s allocs/op | %s |\n", name, f(m["GFLOP/s"]), m["allocs/op"], base
	} else if (name ~ /^AllReduce\//) {
		split(name, p, "/"); sub(/-devices/, "", p[2])
		printf "| all-reduce in process, %s chips, %s | %s GB/s | %s %% of copy() (the best of three in each iteration); ×%s v1; reads and writes memory at %s %% of copy()'"'"'s rate; %s %% of the bare kernel'"'"'s speed on every core (itself %s %% of copy()) |\n", p[2], p[3], f(m["algGB/s"]), f(m["%-copy"]), f(m["x-v1"]), f(m["traffic-%-copy"]), f(m["%-bare-kernel"]), f(m["bare-kernel-%-copy"])
	} else if (name == "Train") {
		printf "| training, default `shardlab run` (8 chips, 30 steps) | %s tokens/s | ×%s v1'"'"'s path (its GEMM kernel, row-by-row attention); FlashAttention takes ×%s the time |\n", f(m["tokens/s"]), f(m["x-v1"]), f(m["flash-time-ratio"])
	} else if (name ~ /^Allreduce\// && ("mpi-%-in-process" in m)) {
		split(name, p, "/"); sub(/ranks/, "", p[2])
		printf "| MPI_Allreduce, %s ranks, %s (medians) | %s GB/s | %s %% of in process (%s GB/s); ×%s glibc'"'"'s default heap |\n", p[2], p[3], f(m["mpi-algGB/s"]), f(m["mpi-%-in-process"]), f(m["in-process-algGB/s"]), f(m["x-glibc-defaults"])
		printf "| all-reduce across %s ranks (the emulator'"'"'s, as training runs it), %s (medians) | %s GB/s | %s %% of in process, the buffer in shared memory and read in place; %s %% through MPI messages (copies) |\n", p[2], p[3], f(m["emu-shared-algGB/s"]), f(m["emu-shared-%-in-process"]), f(m["emu-over-mpi-%-in-process"])
	}
}'

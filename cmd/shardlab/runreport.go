package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"shardlab/emu"
	"shardlab/emu/fabric"
	"shardlab/emu/mpi"
	"shardlab/trace"
)

// report writes, at rank 0, the trace and the report (text or JSON) with,
// under MPI, every rank's bytes to every other; a diverged run is an error
// after its report.
func (f *runFlags) report(tc emu.TrainConfig, res *emu.Result, wall []time.Duration, job *mpi.Job, stdout io.Writer) error {
	var mpiBytes, sharedBytes [][]int64
	if job != nil {
		// every rank's bytes to every other, for the report and the
		// cross-check with Open MPI's own monitoring
		b, _ := json.Marshal([][]int64{job.BytesTo(), job.SharedTo()})
		parts, err := job.Gather(b)
		if err != nil {
			return err
		}
		for _, p := range parts {
			var rows [][]int64
			json.Unmarshal(p, &rows)
			if len(rows) == 2 {
				mpiBytes, sharedBytes = append(mpiBytes, rows[0]), append(sharedBytes, rows[1])
			}
		}
		if job.Rank != 0 {
			return nil
		}
	}
	if *f.tracePath != "" {
		if err := writeEmuTrace(*f.tracePath, res); err != nil {
			return err
		}
	}
	secs := make([]float64, len(wall))
	for i, d := range wall {
		secs[i] = d.Seconds()
	}
	out := emu.NewReport(tc, res, secs)
	out.MPIBytes = mpiBytes
	if slices.ContainsFunc(sharedBytes, func(row []int64) bool { return slices.ContainsFunc(row, func(n int64) bool { return n > 0 }) }) {
		out.SharedBytes = sharedBytes
	}
	if job != nil {
		out.Processes = job.Size
	}
	var err error
	if *f.asJSON {
		err = writeJSON(stdout, out)
	} else {
		err = out.WriteText(stdout)
	}
	if err == nil && res.Diverged != nil {
		// reported above; the run itself failed
		return fmt.Errorf("run: training diverged: %s, so it stopped after step %d of %d; lower --lr (now %g)", res.Diverged, res.Diverged.Step, tc.Steps, tc.LR)
	}
	return err
}

func writeEmuTrace(path string, res *emu.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := trace.NewWriter(f)
	tw.Process(1, "virtual chips (simulated time)")
	byDev := map[int][]fabric.Span{}
	for _, s := range res.Trace {
		byDev[s.Device] = append(byDev[s.Device], s)
	}
	for _, d := range res.Devices {
		tw.Track(1, d.ID, fmt.Sprintf("chip %d (slice %d, coord %v)", d.ID, d.Slice, d.Coord))
		spans := byDev[d.ID]
		sort.Slice(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
		last := 0.0
		for _, s := range spans {
			if s.Start > last+1e-12 {
				tw.Span(1, d.ID, "idle", "bubble", last*1e6, (s.Start-last)*1e6, nil)
			}
			cat := "collective"
			switch {
			case s.Name == "bubble":
				cat = "bubble"
			case strings.HasPrefix(s.Name, "F") || strings.HasPrefix(s.Name, "B"):
				cat = "compute"
			}
			tw.Span(1, d.ID, s.Name, cat, s.Start*1e6, (s.End-s.Start)*1e6, nil)
			last = max(last, s.End)
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runOut is what run --json prints.
type runOut = emu.Report

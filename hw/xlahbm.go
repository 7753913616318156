package hw

import (
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"shardlab/unit"
)

//go:embed xla_hbm.csv
var xlaHBMCSV string

// xlaHBM is the compiler's HBM capacity per JAX device, by generation.
var xlaHBM = mustParseXLAHBM(xlaHBMCSV)

func mustParseXLAHBM(data string) map[Generation]unit.Bytes {
	m, err := parseXLAHBM(data)
	if err != nil {
		panic("hw: the embedded xla_hbm.csv: " + err.Error())
	}
	return m
}

// parseXLAHBM reads xla_hbm.csv: '#' comment lines, a header, then one row
// per generation with its capacity in GiB as XLA prints it, and a quote,
// a source and a date that must not be empty.
func parseXLAHBM(data string) (map[Generation]unit.Bytes, error) {
	r := csv.NewReader(strings.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = 6
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if strings.Join(header, ",") != "generation,capacity_gib,reserved,quote,source,date" {
		return nil, fmt.Errorf("header %q, want generation,capacity_gib,reserved,quote,source,date", header)
	}
	m := map[Generation]unit.Bytes{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return m, nil
		}
		if err != nil {
			return nil, err
		}
		g, ok := generationAliases[rec[0]]
		if !ok || string(g) != rec[0] {
			return nil, fmt.Errorf("generation %q: %w", rec[0], ErrUnknownGeneration)
		}
		if _, dup := m[g]; dup {
			return nil, fmt.Errorf("generation %s listed twice", g)
		}
		gib, err := strconv.ParseFloat(rec[1], 64)
		if err != nil || math.IsNaN(gib) || gib <= 0 || gib > 4096 {
			return nil, fmt.Errorf("%s: capacity_gib %q, want a positive number of GiB", g, rec[1])
		}
		for i, field := range []string{"quote", "source", "date"} {
			if strings.TrimSpace(rec[3+i]) == "" {
				return nil, fmt.Errorf("%s: %s is empty; every row names where it comes from", g, field)
			}
		}
		m[g] = unit.Bytes(math.Round(gib * float64(unit.GiB)))
	}
}

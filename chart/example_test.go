package chart_test

import (
	"fmt"
	"strings"

	"shardlab/chart"
	"shardlab/inference"
	"shardlab/plan"
)

// defaultPlan is the plan of shardlab plan's default options.
func defaultPlan() plan.Plan {
	r, err := plan.ParseRequest(plan.DefaultOptions())
	if err != nil {
		panic(err)
	}
	p, err := plan.Search(r)
	if err != nil {
		panic(err)
	}
	return p
}

// All draws the charts of a plan that apply to it; a plan without a
// pipeline has no pipeline chart.
func ExampleAll() {
	p := defaultPlan()
	charts, skipped, err := chart.All(p)
	if err != nil {
		panic(err)
	}
	for _, c := range charts {
		svg, _ := c.SVG()
		fmt.Println(c.Name, strings.Contains(string(svg), "<svg"))
	}
	fmt.Println(skipped)
	// Output:
	// memory true
	// step true
	// slices true
	// batch true
	// [pipeline: the layout has no pipeline]
}

// Draw draws the charts asked for that apply, in that order, and says why
// the others do not.
func ExampleDraw() {
	p := defaultPlan()
	charts, skipped, err := chart.Draw(p, chart.Pipeline, chart.Step)
	if err != nil {
		panic(err)
	}
	for _, c := range charts {
		fmt.Println(c.Name)
	}
	fmt.Println(skipped)
	// Output:
	// step
	// [pipeline: the layout has no pipeline]
}

// Serving draws a serving plan's layouts against concurrency: latency
// and throughput, one line per layout.
func ExampleServing() {
	q, err := inference.ParseOptions(inference.DefaultOptions())
	r := q.Request
	if err != nil {
		panic(err)
	}
	p, err := inference.Search(r)
	if err != nil {
		panic(err)
	}
	curves := inference.SweepConcurrency(r, p.Layouts[:2])
	charts, err := chart.Serving(p, curves, []string{chart.CurveLabel(curves[0]), chart.CurveLabel(curves[1])})
	if err != nil {
		panic(err)
	}
	for _, c := range charts {
		fmt.Println(c.Name, "|", c.Title)
	}
	// Output:
	// latency | Latency against concurrency: llama3-70b on tpu7x-8
	// throughput | Throughput against concurrency: llama3-70b on tpu7x-8
}

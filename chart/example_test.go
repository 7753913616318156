package chart_test

import (
	"fmt"
	"strings"

	"shardlab/chart"
	"shardlab/plan"
)

// All draws the charts of a plan that apply to it; a plan without a
// pipeline has no pipeline chart.
func ExampleAll() {
	r, err := plan.ParseRequest(plan.DefaultOptions())
	if err != nil {
		panic(err)
	}
	p, err := plan.Search(r)
	if err != nil {
		panic(err)
	}
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

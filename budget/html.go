package budget

import (
	"fmt"
	"html/template"
	"io"
	"strings"
)

// pageTemplate is the budget's HTML page: the chart, the ranked table
// with its bands, and what the text output says besides, with every
// price's source as a link. It needs nothing outside the file.
var pageTemplate = template.Must(template.New("budget").Funcs(template.FuncMap{
	"days":    days,
	"dollars": dollars,
	"band":    daysBand,
	"usdBand": dollarsBand,
	"goodput": goodput,
	"hours":   chipHours,
	"inc":     func(i int) int { return i + 1 },
	"energy":  func(e *RowEnergy) string { m, _ := e.columns(); return m },
	"co2":     func(e *RowEnergy) string { _, c := e.columns(); return c },
	"origin":  Price.provenance,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>shardlab budget: {{.R.Model}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { padding: 0.2em 0.6em; text-align: right; border-bottom: 1px solid #ddd; }
th { background: #f4f4f4; }
tr.pareto td { font-weight: bold; }
figure { margin: 1em 0; }
li { margin: 0.2em 0; }
</style>
</head>
<body>
{{template "result" .}}
</body>
</html>
{{define "result"}}<h1>{{.R.Model}} on {{printf "%.3g" .R.Tokens}} tokens</h1>
<p>Prices for {{.R.Region}}; searched {{.R.Searched}}.</p>
{{range .Charts}}<figure class="chart">{{.}}</figure>
{{end}}
{{if .R.Rows}}<table>
<tr><th>#</th><th>TPU</th><th>chips</th><th>mode</th><th>step</th><th>goodput</th><th>time</th><th>time band</th><th>chip-hours</th><th>dollars</th><th>dollars band</th><th>$/B tokens</th><th>{{.TermHead}}</th>{{if .Energy}}<th>MWh</th><th>t CO2e</th>{{end}}<th>Pareto</th></tr>
{{range $i, $r := .R.Rows}}<tr{{if $r.Pareto}} class="pareto"{{end}}><td>{{if $.Links}}<a href="{{index $.Links $i}}" title="the plan behind this row">{{inc $i}}</a>{{else}}{{inc $i}}{{end}}</td><td>{{if gt $r.Slices 1}}{{$r.Slices}} × {{end}}{{$r.AcceleratorType}}</td><td>{{$r.Chips}}</td><td>{{$r.Mode}}</td><td>{{printf "%.2fs" $r.StepS}}</td><td>{{goodput $r.Goodput}}</td><td>{{days $r.TimeToTrainS}}</td><td>{{with $r.Band}}{{band .TimeLow .TimeHigh}}{{else}}-{{end}}</td><td>{{hours $r.ChipHours}}</td><td>{{dollars $r.USD}}</td><td>{{with $r.Band}}{{usdBand .USDLow .USDHigh}}{{else}}-{{end}}</td><td>{{dollars $r.USDPerBTokens}}</td><td>{{if $r.CommitmentUSD}}{{dollars $r.CommitmentUSD}}{{else}}-{{end}}</td>{{if $.Energy}}<td>{{energy $r.Energy}}</td><td>{{co2 $r.Energy}}</td>{{end}}<td>{{if $r.Pareto}}*{{end}}</td></tr>
{{end}}</table>
<p>* on the Pareto front of time against dollars (bold){{with .Show}}; <code>{{.}}</code> prints the plan behind row N{{end}}{{if .Links}}; a row's number links to the plan behind it{{end}}.</p>
<p>{{.TermLegend}}.</p>
<p>{{.CostLegend}}.</p>
{{else}}<p>{{.NoRows}}.</p>
{{end}}<ul>
{{range .Bands}}<li>band: {{.}}</li>
{{end}}{{range .R.Rows}}{{range .Warnings}}<li>warning: {{.}}</li>
{{end}}{{end}}{{range .R.Unpriced}}<li>unpriced: {{.}}</li>
{{end}}{{range .R.Timed}}<li>unpriced, timed for the deadline: {{.Line $.R.Deadline}}</li>
{{end}}{{range .R.Dropped}}<li>dropped: {{.What}}: {{.Why}}</li>
{{end}}{{range .R.Notes}}<li>note: {{.}}</li>
{{end}}{{range .Prices}}<li>price: {{.Generation}} {{.Mode}} {{if eq .Region "*"}}(no region named){{else}}in {{.Region}}{{end}} ${{.USDPerChipHour}} per chip-hour, {{if .Given}}{{origin .}}{{else}}read {{.Read}} from <a href="{{.Source}}">{{.Source}}</a>{{end}}</li>
{{end}}</ul>
{{end}}`))

// WriteHTML writes the result as one self-contained HTML page: the
// charts (SVG documents, as package chart draws them; the page trusts
// them as markup), the ranked table with its bands, and the unpriced,
// dropped, notes and prices of WriteText; show is as WriteText's.
func (res Result) WriteHTML(w io.Writer, show string, charts ...[]byte) error {
	return res.writeHTML(w, "budget", show, nil, charts)
}

// WriteHTMLBody writes what WriteHTML's page holds, without the page
// around it: for a page of the caller's (the web UI's budget page). link,
// when not nil, is the address of the plan behind a row, which the row's
// number links to.
func (res Result) WriteHTMLBody(w io.Writer, show string, link func(Row) string, charts ...[]byte) error {
	return res.writeHTML(w, "result", show, link, charts)
}

// writeHTML executes template name of the page with the result.
func (res Result) writeHTML(w io.Writer, name, show string, link func(Row) string, charts [][]byte) error {
	bands, share := res.bands()
	for i, b := range bands {
		bands[i] = fmt.Sprintf("validate's held-out %.0f %% band of the planner's error, %s", 100*share, b)
	}
	d := struct {
		R      Result
		Charts []template.HTML
		Bands  []string
		Prices []Price
		Show   string
		Energy bool
		Links  []string // by row, when link is given
		NoRows string   // why there is no row, when there is none
		// TermHead and TermLegend are the term bill's column and legend,
		// CostLegend what the ranking and the front weigh
		TermHead, TermLegend, CostLegend string
	}{TermHead: termBillHead, TermLegend: termBillLegend, CostLegend: costLegend, R: res, Bands: bands, Prices: res.PricesUsed(), Show: show, Energy: res.energy()}
	if err := res.Err(); err != nil {
		s := res.noRows(err)
		d.NoRows = strings.ToUpper(s[:1]) + s[1:]
	}
	if link != nil {
		for _, row := range res.Rows {
			d.Links = append(d.Links, link(row))
		}
	}
	for _, c := range charts {
		d.Charts = append(d.Charts, template.HTML(c))
	}
	return pageTemplate.ExecuteTemplate(w, name, d)
}

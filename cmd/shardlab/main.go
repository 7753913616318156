// Command shardlab plans how to lay out a transformer training job on Cloud
// TPU and explains the plan; see README.md.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

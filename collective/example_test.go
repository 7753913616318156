package collective_test

import (
	"fmt"

	"shardlab/collective"
)

func ExampleBytes() {
	// one device's share of a ring all-reduce of 1 GiB over 8 devices
	fmt.Println(collective.Bytes(collective.AllReduce, 8, 1<<30))
	// Output:
	// 1.75 GiB
}

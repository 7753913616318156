package schedule_test

import (
	"fmt"

	"shardlab/schedule"
)

func ExampleBubble() {
	b, _ := schedule.Bubble(schedule.GPipe, 4, 12) // (p−1)/(m+p−1)
	fmt.Printf("%.3f\n", b)
	// Output:
	// 0.200
}

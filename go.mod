module shardlab

go 1.26.8

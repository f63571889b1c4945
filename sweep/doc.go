// Package sweep is what runs many cells beyond one process: splitting a
// sweep into cost-balanced shards, estimating each cell's cost, and the
// records files that shards and runs write (reading them line by line,
// checking and merging them).
package sweep

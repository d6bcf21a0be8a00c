// Command timeagent-bench measures timeagent against cp -a, a git shadow
// repository and fuse-overlayfs on generated trees, and prints the results as
// ratios measured in one run (never absolute timed assertions). It is run by
// scripts/bench.sh ("make bench"); it is not part of "make test".
//
// Subcommands:
//
//	timeagent-bench run [-quick] [-work DIR] [-bin PATH] [-out FILE] [-only huge]
//	timeagent-bench gen -dir DIR -n FILES [-seed N]
//	timeagent-bench modify -list FILE -root DIR -n FILES [-seed N]
//	timeagent-bench scanprof -dir DIR [-cpuprofile FILE]
//	timeagent-bench create -dir DIR -n FILES
//
// "run" is the whole benchmark ("-only huge" runs just the file over 4 GiB
// in a fuse session, for development; it writes -out only when given); the others are its building blocks, also
// useful on their own (scanprof profiles cow.Scan directly, cold and warm).
package main

package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: timeagent-bench run|gen|modify|scanprof [flags]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run":
		err = runMain(args)
	case "gen":
		err = genMain(args)
	case "modify":
		err = modifyMain(args)
	case "create":
		err = createMain(args)
	case "scanprof":
		err = scanprofMain(args)
	default:
		fmt.Fprintf(os.Stderr, "timeagent-bench: unknown command %q\n", cmd)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "timeagent-bench:", err)
		os.Exit(1)
	}
}

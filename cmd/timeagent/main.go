// Command timeagent runs a coding agent so that everything it does to the
// repository's files can be inspected, undone, redone and branched.
package main

import (
	"os"
)

func main() {
	if code, ok := proxyMain(); ok {
		os.Exit(code)
	}
	os.Exit(execute(os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, nil))
}

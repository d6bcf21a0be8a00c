//go:build tools

package main

import (
	_ "github.com/cespare/xxhash/v2"
	_ "github.com/creack/pty"
	_ "github.com/dgraph-io/badger/v4"
	_ "github.com/hanwen/go-fuse/v2/fs"
	_ "github.com/hanwen/go-fuse/v2/posixtest"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "pgregory.net/rapid"
)

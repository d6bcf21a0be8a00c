package fs

import "golang.org/x/sys/unix"

func statAtime(st *unix.Stat_t) unix.Timespec { return st.Atim }
func statMtime(st *unix.Stat_t) unix.Timespec { return st.Mtim }
func statMtimeNs(st *unix.Stat_t) int64       { return st.Mtim.Nano() }
func statCtimeNs(st *unix.Stat_t) int64       { return st.Ctim.Nano() }

const utimeOmit = -2

// oNoatime: macOS has no O_NOATIME; reading a file to hash it updates its
// access time there.
const oNoatime = 0

package fs

import "golang.org/x/sys/unix"

func statAtime(st *unix.Stat_t) unix.Timespec { return st.Atim }
func statMtime(st *unix.Stat_t) unix.Timespec { return st.Mtim }
func statMtimeNs(st *unix.Stat_t) int64       { return st.Mtim.Nano() }
func statCtimeNs(st *unix.Stat_t) int64       { return st.Ctim.Nano() }

const utimeOmit = (1 << 30) - 2

// oNoatime opens a file without updating its access time: hashing an upper
// file into the journal must not change the atime the agent sees.
const oNoatime = unix.O_NOATIME

package cow

import (
	"io/fs"

	"github.com/timeagent-dev/timeagent/journal"
)

// statInfo is what one lstat tells about a path, in a platform-neutral form.
type statInfo struct {
	kind    journal.NodeKind
	mode    fs.FileMode // permission bits plus setuid, setgid, sticky
	size    int64
	mtimeNs int64
	ctimeNs int64
	ino     uint64
	nlink   uint64
	// skip marks kinds that are not recorded (sockets, devices).
	skip bool
}

// matches reports whether a cache entry describes the same inode, unchanged.
func (s statInfo) matches(e journal.StatEntry) bool {
	return s.kind == e.Kind && s.mode == e.Mode && s.size == e.Size &&
		s.mtimeNs == e.MtimeNs && s.ctimeNs == e.CtimeNs && s.ino == e.Ino
}

// entry builds a stat entry from what was seen and the node's state.
func (s statInfo) entry(st journal.NodeState) journal.StatEntry {
	return journal.StatEntry{
		Kind: st.Kind, Size: st.Size, MtimeNs: s.mtimeNs, CtimeNs: s.ctimeNs,
		Ino: s.ino, Mode: st.Mode, Blob: st.Blob, Target: st.Target,
	}
}

// Node kinds, shortened.
const (
	absentKind  = journal.Absent
	fileKind    = journal.File
	dirKind     = journal.Dir
	symlinkKind = journal.Symlink
	fifoKind    = journal.Fifo
)

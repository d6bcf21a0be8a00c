package fs

import "golang.org/x/sys/unix"

// inodeFlags reads whether the lower object rel, whose lstat is st, is
// immutable or append-only (chflags uchg, schg, uappnd, sappnd).
func (l *lowerTree) inodeFlags(rel string, st *unix.Stat_t) (immutable, appendOnly bool) {
	return st.Flags&(unix.UF_IMMUTABLE|unix.SF_IMMUTABLE) != 0, st.Flags&(unix.UF_APPEND|unix.SF_APPEND) != 0
}

//go:build linux

package session

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// guardSession keeps the agent away from the real tree behind the overlay:
// this process leaves the root (so /proc/<pid>/cwd does not lead to the
// lower tree) and becomes non-dumpable (so /proc/<pid>/fd, where the
// overlay's descriptor of the lower root is, and ptrace are closed to
// processes of the same user that lack CAP_SYS_PTRACE). The returned
// function undoes both once the overlay is gone.
func guardSession() (restore func()) {
	wd, _ := os.Getwd()
	left := os.Chdir("/") == nil
	dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	guarded := err == nil && dumpable != 0 && unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) == nil
	return func() {
		if guarded {
			_ = unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(dumpable), 0, 0, 0)
		}
		if left && wd != "" {
			_ = os.Chdir(wd) // the directory may be gone after the apply
		}
	}
}

// deviceOf is the device number of the file system path is on (0 if it
// cannot be read).
func deviceOf(path string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	return uint64(st.Dev)
}

// rootUsers lists the processes, other than this one and its ancestors
// (which wait for it), whose working directory, root directory or an open
// file is on device dev at or below root.
func rootUsers(root string, dev uint64) []rootUser {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	skip := ancestors()
	var out []rootUser
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || skip[pid] {
			continue
		}
		if how := usesRoot(pid, root, dev); how != "" {
			out = append(out, rootUser{Pid: pid, Name: procName(pid), How: how})
		}
	}
	return out
}

// usesRoot says how process pid uses root on dev ("working directory",
// "open file"), or "".
func usesRoot(pid int, root string, dev uint64) string {
	dir := "/proc/" + strconv.Itoa(pid)
	for _, l := range []struct{ link, how string }{{"/cwd", "working directory"}, {"/root", "root directory"}} {
		if onRoot(dir+l.link, root, dev) {
			return l.how
		}
	}
	fds, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return ""
	}
	for _, fd := range fds {
		if onRoot(dir+"/fd/"+fd.Name(), root, dev) {
			return "open file"
		}
	}
	return ""
}

// onRoot reports whether the /proc link leads to root or below it, on dev.
func onRoot(link, root string, dev uint64) bool {
	target, err := os.Readlink(link)
	if err != nil || (target != root && !strings.HasPrefix(target, strings.TrimSuffix(root, "/")+"/")) {
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat(link, &st); err != nil {
		return false
	}
	return uint64(st.Dev) == dev
}

// ancestors are this process and the processes above it.
func ancestors() map[int]bool {
	out := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !out[pid]; {
		out[pid] = true
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			break
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			break
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			break
		}
		if pid, err = strconv.Atoi(f[1]); err != nil {
			break
		}
	}
	return out
}

// procName is the command name of pid.
func procName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

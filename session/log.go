package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// LogName is the session log's file name in a state dir: what the overlay
// could not do (the cause behind an agent's EIO) and each session's start
// and end.
const LogName = "session.log"

// logLimit bounds the session log: a line that would take it past the
// limit first moves it to LogName+".1" (replacing the one there), so the
// two files never hold more than twice the limit.
const logLimit = 1 << 20

// LogPath is the session log of a state dir.
func LogPath(stateDir string) string { return filepath.Join(stateDir, LogName) }

// sessionLog appends lines to the session log. It never fails its caller:
// a log that cannot be written is skipped (the error it would have
// recorded still reaches the user where it is returned).
type sessionLog struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	size   int64
	prefix string
	// counting is set once the overlay is mounted: what it logs while
	// mounting (io_uring unavailable, say) is kept but is no problem.
	counting bool
	errors   int    // lines written through Printf while counting
	first    string // the first of them
}

func openLog(stateDir string) *sessionLog {
	l := &sessionLog{path: LogPath(stateDir)}
	l.open()
	return l
}

func (l *sessionLog) open() {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	l.f = f
	if st, err := f.Stat(); err == nil {
		l.size = st.Size()
	}
	// The log matters most when the disk is full (the journal's writes
	// fail, and the overlay logs why): its room is taken in advance.
	reserveLog(f, l.size, logReserve)
}

// logReserve is the room the session log takes in advance (where the file
// system allows it), so it can still be written on a full disk.
const logReserve = 256 << 10

// Printf records an error the overlay reports (fs.Options.Logf).
func (l *sessionLog) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	if l.counting {
		l.errors++
		if l.first == "" {
			l.first = msg
		}
	}
	l.mu.Unlock()
	l.write(msg)
}

// note records a step of the session.
func (l *sessionLog) note(format string, args ...any) { l.write(fmt.Sprintf(format, args...)) }

func (l *sessionLog) write(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	line := time.Now().UTC().Format("2006-01-02T15:04:05.000Z") + " " + l.prefix +
		strings.ReplaceAll(strings.TrimRight(msg, "\n"), "\n", "\n\t") + "\n"
	if l.size+int64(len(line)) > logLimit && l.size > 0 {
		l.f.Close()
		l.f = nil
		if err := os.Rename(l.path, l.path+".1"); err != nil {
			return
		}
		l.size = 0
		l.open()
		if l.f == nil {
			return
		}
	}
	n, _ := l.f.WriteString(line)
	l.size += int64(n)
}

// problems returns how many errors were logged and the first of them.
func (l *sessionLog) problems() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errors, l.first
}

func (l *sessionLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

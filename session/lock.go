package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ErrLocked means another live timeagent process holds the root's lock.
var ErrLocked = errors.New("root is locked by another timeagent process")

// Holder describes the process holding a root's lock.
type Holder struct {
	Pid     int    `json:"pid"`
	Command string `json:"command"` // "run" for a session, else the command name
	Session uint64 `json:"session,omitempty"`
	Control string `json:"control,omitempty"` // control socket address of a running session
}

// Lock is the per-root lock: one session (or one history command) at a time.
// It is an OS file lock, so a process that dies releases it.
type Lock struct {
	f    *os.File
	path string
}

// LockPath is the lock file of a state dir.
func LockPath(stateDir string) string { return filepath.Join(stateDir, "lock") }

// TryLock takes the lock of stateDir without waiting. When another process
// holds it, it returns ErrLocked and what that process wrote about itself.
func TryLock(stateDir string, h Holder) (*Lock, *Holder, error) {
	p := LockPath(stateDir)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open lock %s: %w", p, err)
	}
	ok, err := tryLockFile(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if !ok {
		f.Close()
		held := ReadHolder(stateDir)
		return nil, held, ErrLocked
	}
	l := &Lock{f: f, path: p}
	if err := l.Update(h); err != nil {
		l.Release()
		return nil, nil, err
	}
	return l, nil, nil
}

// WaitLock takes the lock, retrying for up to wait while another short
// command holds it. A running session is reported at once (ErrLocked).
func WaitLock(stateDir string, h Holder, wait time.Duration) (*Lock, *Holder, error) {
	deadline := time.Now().Add(wait)
	for {
		l, held, err := TryLock(stateDir, h)
		if !errors.Is(err, ErrLocked) || (held != nil && held.Command == "run") || time.Now().After(deadline) {
			return l, held, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Update rewrites the holder description.
func (l *Lock) Update(h Holder) error {
	b, _ := json.Marshal(h)
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("write lock %s: %w", l.path, err)
	}
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write lock %s: %w", l.path, err)
	}
	return nil
}

// Release unlocks. The file stays, so the next locker reuses it.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	unlockFile(l.f)
	err := l.f.Close()
	l.f = nil
	return err
}

// ReadHolder returns what the lock's holder wrote about itself, or nil.
func ReadHolder(stateDir string) *Holder {
	for i := 0; i < 5; i++ {
		b, err := os.ReadFile(LockPath(stateDir))
		if err != nil {
			return nil
		}
		var h Holder
		if len(b) > 0 && json.Unmarshal(b, &h) == nil {
			return &h
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// File is the lock's open file, to hand to a child process (HandOff).
func (l *Lock) File() *os.File { return l.f }

// HandOff gives the lock to a child process that was started with its file
// (File) and describes itself as h: this process closes its own descriptor
// without unlocking, so the lock stays held by the child's descriptor of the
// same open file (a flock lock belongs to the open file, not the process)
// until the child releases it or dies. Only Unix hands locks over.
func (l *Lock) HandOff(h Holder) error {
	if err := l.Update(h); err != nil {
		return err
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// AdoptLock takes over the lock whose open file f a parent handed over
// (HandOff). It checks that f is the lock file of stateDir and that the lock
// is held through it.
func AdoptLock(stateDir string, f *os.File) (*Lock, error) {
	p := LockPath(stateDir)
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("adopt lock %s: %w", p, err)
	}
	pi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("adopt lock %s: %w", p, err)
	}
	if !os.SameFile(fi, pi) {
		return nil, fmt.Errorf("adopt lock %s: the descriptor handed over is another file", p)
	}
	// Locking again through the same open file succeeds at once when it
	// holds the lock, and fails when it does not.
	ok, err := tryLockFile(f)
	if err != nil {
		return nil, fmt.Errorf("adopt lock %s: %w", p, err)
	}
	if !ok {
		return nil, fmt.Errorf("adopt lock %s: %w", p, ErrLocked)
	}
	return &Lock{f: f, path: p}, nil
}

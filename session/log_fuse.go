//go:build linux || darwin

package session

// count makes later Printf lines count as problems (problems): the overlay
// calls it once mounted.
func (l *sessionLog) count() {
	l.mu.Lock()
	l.counting = true
	l.mu.Unlock()
}

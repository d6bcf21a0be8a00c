package fs

// copyXattrs does nothing on macOS: the overlay serves no extended
// attributes there.
func (o *Overlay) copyXattrs(p, up string) error { return nil }

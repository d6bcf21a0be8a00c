package xattr

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Copy sets on dst every extended attribute src has, without following a
// final symlink of either path. An attribute the caller may not read or
// set (trusted.* unless root, a namespace dst's filesystem does not take)
// is left out, as cp -a does; any other failure is returned, naming the
// attribute.
func Copy(src, dst string) error {
	names, err := list(src)
	if err != nil {
		return fmt.Errorf("list extended attributes of %s: %w", src, err)
	}
	for _, name := range names {
		val, err := get(src, name)
		if errors.Is(err, unix.ENODATA) || notAllowed(err) {
			continue // removed meanwhile, or not readable by this user
		}
		if err != nil {
			return fmt.Errorf("read extended attribute %s of %s: %w", name, src, err)
		}
		if err := unix.Lsetxattr(dst, name, val, 0); err != nil && !notAllowed(err) {
			return fmt.Errorf("set extended attribute %s on %s: %w", name, dst, err)
		}
	}
	return nil
}

// notAllowed reports an error that means the attribute cannot be copied by
// this user or to this filesystem, not that something failed.
func notAllowed(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOTSUP)
}

// list returns the names of p's extended attributes.
func list(p string) ([]string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Llistxattr(p, buf)
		if errors.Is(err, unix.ERANGE) {
			sz, err := unix.Llistxattr(p, nil)
			if err != nil {
				return nil, err
			}
			buf = make([]byte, sz+64)
			continue
		}
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var names []string
		for _, s := range strings.Split(string(buf[:n]), "\x00") {
			if s != "" {
				names = append(names, s)
			}
		}
		return names, nil
	}
}

// get returns the value of p's attribute name.
func get(p, name string) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Lgetxattr(p, name, buf)
		if errors.Is(err, unix.ERANGE) {
			sz, err := unix.Lgetxattr(p, name, nil)
			if err != nil {
				return nil, err
			}
			buf = make([]byte, sz+64)
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

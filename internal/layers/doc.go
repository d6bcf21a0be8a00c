// Package layers holds the test that keeps the package layering of
// DESIGN.md: a package may import only packages below it.
package layers

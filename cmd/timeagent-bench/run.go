package main
func runMain([]string) error { return nil }

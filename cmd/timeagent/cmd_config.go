package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/cow"
)

// configDoc is config's JSON document.
type configDoc struct {
	SchemaVersion int    `json:"schemaVersion"`
	File          string `json:"file"`
	MaxSize       int64  `json:"maxSize"`
	Keep          string `json:"keep"`
}

func (a *app) configCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use: "config [KEY [VALUE]]",
		Example: `  timeagent config                    # the root's settings
  timeagent config gc.max-size 2G     # run collects the history past 2 GiB of stored content
  timeagent config gc.keep 14d        # gc keeps every task of the last 14 days`,
		Short: "Show or set this root's settings: gc.max-size (the journal's size budget) and gc.keep",
		Long: `config shows the root's settings; config KEY shows one; config KEY VALUE sets it.

  gc.max-size  the size budget of the history's stored content (like 2G; 0 = none).
               When the journal's stored content passes it, run collects the
               history after the session (as timeagent gc --max-size would).
  gc.keep      how long gc keeps every task (like 30d; the default).

The settings live in config.json in the root's state dir, beside the journal.`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.active != nil {
				return errors.New("config cannot run inside a session: run it when the session has ended")
			}
			if err := a.locate(); err != nil {
				return err
			}
			if err := os.MkdirAll(a.state, 0o700); err != nil {
				return fmt.Errorf("state dir %s: %w", a.state, err)
			}
			cfg, err := cow.LoadGCConfig(a.state)
			if err != nil {
				return err
			}
			if len(args) == 2 {
				switch args[0] {
				case "gc.max-size":
					n, err := cow.ParseSize(args[1])
					if err != nil {
						return &usageError{err}
					}
					cfg.MaxSize = n
				case "gc.keep":
					d, err := cow.ParseDuration(args[1])
					if err != nil {
						return &usageError{err}
					}
					keep := cow.Duration(d)
					cfg.Keep = &keep
				default:
					return &usageError{fmt.Errorf("unknown setting %q: the settings are gc.max-size and gc.keep", args[0])}
				}
				if err := cow.SaveGCConfig(a.state, cfg); err != nil {
					return err
				}
			}
			keep := cfg.KeepOrDefault()
			doc := configDoc{SchemaVersion: schemaVersion, File: a.state + string(os.PathSeparator) + cow.GCConfigFile,
				MaxSize: cfg.MaxSize, Keep: cow.FormatDuration(keep)}
			if a.json {
				return writeJSON(a.io.out, doc)
			}
			size := "none"
			if cfg.MaxSize > 0 {
				size = cow.FormatSize(cfg.MaxSize)
			}
			switch {
			case len(args) == 0 || len(args) == 2:
				fmt.Fprintf(a.io.out, "gc.max-size  %s\ngc.keep      %s\n", size, doc.Keep)
			case args[0] == "gc.max-size":
				fmt.Fprintln(a.io.out, size)
			case args[0] == "gc.keep":
				fmt.Fprintln(a.io.out, doc.Keep)
			default:
				return &usageError{fmt.Errorf("unknown setting %q: the settings are gc.max-size and gc.keep", args[0])}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	return cmd
}

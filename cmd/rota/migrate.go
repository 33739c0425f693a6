package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store/postgres"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", stdout)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: rota migrate up|down|status [flags]")
		fmt.Fprintln(fs.Output(), "  up      apply every pending migration (each in its own transaction)")
		fmt.Fprintln(fs.Output(), "  down    revert the newest migration (--steps N; --steps 0 reverts all and needs --yes)")
		fmt.Fprintln(fs.Output(), "  status  list migrations and when they were applied")
		fs.PrintDefaults()
	}
	dbURL := databaseURLFlag(fs)
	steps := fs.Int("steps", 1, "down: how many migrations to revert (0 = all, with --yes)")
	yes := fs.Bool("yes", false, "down --steps 0: confirm reverting every migration, which drops all of Rota's tables and data")
	if len(args) == 0 {
		return usagef("migrate needs an action: up, down or status (see 'rota migrate -h')")
	}
	action, rest := args[0], args[1:]
	if isHelpArg(action) {
		hideSecretDefaults(fs)
		fs.Usage()
		return nil
	}
	if err := parseFlags(fs, rest); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return usagef("migrate %s: unexpected argument %q", action, fs.Arg(0))
	}
	if action != "up" && action != "down" && action != "status" {
		return usagef("migrate: unknown action %q (want up, down or status)", action)
	}
	if *steps < 0 {
		return usagef("migrate down: --steps must be 0 or more")
	}
	if action == "down" && *steps == 0 && !*yes {
		return usagef("migrate down --steps 0 reverts every migration and deletes all of Rota's data; add --yes to confirm")
	}
	pool, err := openPool(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	switch action {
	case "up":
		applied, err := postgres.MigrateUp(ctx, pool)
		for _, v := range applied {
			fmt.Fprintf(stdout, "applied %04d\n", v)
		}
		if err != nil {
			return err
		}
		if len(applied) == 0 {
			fmt.Fprintln(stdout, "schema is up to date")
		}
	case "down":
		reverted, err := postgres.MigrateDown(ctx, pool, *steps)
		for _, v := range reverted {
			fmt.Fprintf(stdout, "reverted %04d\n", v)
		}
		if err != nil {
			return err
		}
		if len(reverted) == 0 {
			fmt.Fprintln(stdout, "nothing to revert")
		}
	case "status":
		statuses, err := postgres.MigrationStatuses(ctx, pool)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
		for _, s := range statuses {
			applied := "pending"
			if s.AppliedAt != nil {
				applied = s.AppliedAt.UTC().Format("2006-01-02T15:04:05Z")
			}
			fmt.Fprintf(tw, "%04d\t%s\t%s\n", s.Version, s.Name, applied)
		}
		return tw.Flush()
	}
	return nil
}

// openPool connects to PostgreSQL and checks the connection, so a bad URL fails at once
// with one line rather than on first use.
func openPool(ctx context.Context, dbURL string) (*pgxpool.Pool, error) {
	pool, err := newPool(dbURL, 0)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

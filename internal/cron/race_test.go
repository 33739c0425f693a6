//go:build race

package cron_test

func init() { raceEnabled = true }

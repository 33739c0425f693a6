package cron_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/rotaqueue/rota/internal/cron"
)

func ExampleParse() {
	s, err := cron.Parse("30 8 * * mon-fri")
	if err != nil {
		panic(err)
	}
	after := time.Date(2024, 1, 5, 9, 0, 0, 0, time.UTC) // a Friday, after 08:30
	fmt.Println(s.Next(after, time.UTC))
	// Output: 2024-01-08 08:30:00 +0000 UTC
}

func ExampleParse_error() {
	_, err := cron.Parse("0 0 30 2 *")
	var se *cron.SpecError
	if errors.As(err, &se) {
		fmt.Println(se.Field)
		fmt.Println(err)
	}
	// Output:
	// day-of-month
	// day-of-month: day "30" never occurs in month "2"
}

func ExampleNextTick() {
	// 02:30 does not exist in Berlin on 2024-03-31 (02:00 CET -> 03:00 CEST): the tick
	// fires when the gap ends. On 2024-10-27 02:30 happens twice: it fires once, first.
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, after := range []time.Time{
		time.Date(2024, 3, 30, 12, 0, 0, 0, time.UTC),
		time.Date(2024, 10, 26, 12, 0, 0, 0, time.UTC),
		time.Date(2024, 10, 27, 0, 30, 0, 0, time.UTC),
	} {
		next, err := cron.NextTick("30 2 * * *", after, "Europe/Berlin")
		if err != nil {
			panic(err)
		}
		fmt.Println(next, "=", next.In(berlin).Format("2006-01-02 15:04 MST"))
	}
	// Output:
	// 2024-03-31 01:00:00 +0000 UTC = 2024-03-31 03:00 CEST
	// 2024-10-27 00:30:00 +0000 UTC = 2024-10-27 02:30 CEST
	// 2024-10-28 01:30:00 +0000 UTC = 2024-10-28 02:30 CET
}

func ExampleSpec_Next_dayRule() {
	after := time.Date(2024, 9, 1, 0, 0, 0, 0, time.UTC)
	for _, spec := range []string{
		"0 0 13 * 5",  // the 13th or a Friday
		"0 0 */2 * 5", // an odd day that is a Friday: */2 starts with *
	} {
		s, _ := cron.Parse(spec)
		fmt.Println(spec, "->", s.Next(after, time.UTC).Format("Mon 2006-01-02"))
	}
	// Output:
	// 0 0 13 * 5 -> Fri 2024-09-06
	// 0 0 */2 * 5 -> Fri 2024-09-13
}

// archivectl cases: moderators' cases on recordings (opened by a flag or
// by hand), their threads of notes, who works on them and how they end.

package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/wire"
)

// casesOptions are the flags of archivectl cases.
type casesOptions struct {
	json     bool
	note     string
	status   string
	assignee string
	all      bool
}

// AddFlags declares the flags on fs.
func (o *casesOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON (the API's answer)")
	fs.StringVar(&o.note, "note", "", "open: the case's first note")
	fs.StringVar(&o.status, "status", "", "ls: only cases with this status (open, resolved, dismissed; default open)")
	fs.StringVar(&o.assignee, "assignee", "", "ls: only cases assigned to this moderator (me: you)")
	fs.BoolVar(&o.all, "all", false, "ls: cases of every status")
}

func cmdCases() *command {
	o := new(casesOptions)
	return &command{
		name: "cases", args: "[ls [--status S] [--assignee WHO|me] [--all] | show ID | open REC [--note TEXT] | note ID TEXT | resolve ID | dismiss ID | reopen ID | assign ID WHO|me|-] [--json]",
		summary: "moderators' cases: open, annotate, assign, resolve or dismiss",
		help: `A case is a moderator's work on one recording: a flag opens one (or adds a
note to the recording's open case), or 'cases open REC' opens one by hand.
It has a status (open, resolved, dismissed), an assignee (a moderator's
name: a moderator's or admin's token, or you) and a thread of notes (who,
when, what). Every change is in the audit log ('archivectl audit').

  cases                       the open cases, most recently changed first
  cases ls --all              every case (--status, --assignee me to narrow)
  cases show ID               one case and its thread (ID: a unique prefix)
  cases open REC --note TEXT  open a case on recording REC
  cases note ID TEXT          add a note to the thread
  cases resolve ID            the recording was dealt with
  cases dismiss ID            nothing to do
  cases reopen ID             open again
  cases assign ID WHO         WHO works on it (me: you; -: nobody)`,
		access: writeAccess,
		flags:  o.AddFlags,
		run:    func(ctx context.Context, e *env, args []string) error { return runCases(ctx, e, o, args) },
	}
}

func runCases(ctx context.Context, e *env, o *casesOptions, args []string) error {
	sub := "ls"
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	want := map[string]int{"ls": 0, "show": 1, "open": 1, "note": 2, "resolve": 1, "dismiss": 1, "reopen": 1, "assign": 2}
	n, ok := want[sub]
	if !ok {
		return usagef("cases takes ls, show, open, note, resolve, dismiss, reopen or assign, not %q", sub)
	}
	if len(args) != n {
		return usagef("cases %s takes %s", sub, map[string]string{
			"ls": "no arguments", "show": "a case ID", "open": "a recording ID", "note": "a case ID and the note's text (quoted)",
			"resolve": "a case ID", "dismiss": "a case ID", "reopen": "a case ID", "assign": "a case ID and a moderator's name (me, or - for nobody)",
		}[sub])
	}
	if sub != "ls" && (o.status != "" || o.assignee != "" || o.all) {
		return usagef("--status, --assignee and --all go with cases ls")
	}
	if sub != "open" && o.note != "" {
		return usagef("--note goes with cases open (cases note ID TEXT adds one)")
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	var c *archive.Case
	switch sub {
	case "ls":
		return listCases(e, x, o)
	case "show":
		c, err = x.Case(args[0])
	case "open":
		c, err = x.OpenCase(ctx, e.who, args[0], o.note)
	case "note":
		c, err = x.AddCaseNote(ctx, e.who, args[0], args[1])
	case "resolve", "dismiss", "reopen":
		status := map[string]string{"resolve": archive.CaseResolved, "dismiss": archive.CaseDismissed, "reopen": archive.CaseOpen}[sub]
		c, err = x.UpdateCase(ctx, e.who, args[0], replay.CaseChange{Status: &status})
	case "assign":
		who := args[1]
		switch who {
		case "me":
			who = e.who.Name
		case "-":
			who = ""
		}
		c, err = x.UpdateCase(ctx, e.who, args[0], replay.CaseChange{Assignee: &who})
	}
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(e, wire.CaseOf(c))
	}
	if sub != "show" {
		fmt.Fprintf(e.stdout, "case %s: %s\n", c.ID, caseLine(c))
		return nil
	}
	printCase(e, c)
	return nil
}

// listCases prints the cases ls chooses.
func listCases(e *env, x *replay.Archive, o *casesOptions) error {
	f := replay.CaseFilter{Status: o.status, Assignee: o.assignee}
	if f.Status == "" && !o.all {
		f.Status = archive.CaseOpen
	} else if o.all && o.status != "" {
		return usagef("--all goes without --status")
	}
	if f.Assignee == "me" {
		f.Assignee = e.who.Name
	}
	cs, err := x.Cases(f)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(e, wire.CasesOf(cs))
	}
	if len(cs) == 0 {
		fmt.Fprintln(e.stderr, "no cases")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tSTATUS\tRECORDING\tASSIGNEE\tUPDATED\tLAST NOTE")
	for i := range cs {
		c := &cs[i]
		last := "-"
		if n := c.LastNote(); n != nil {
			last = n.Who + ": " + n.Text
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID.String()[:8], c.Status, c.Recording.String()[:8],
			textsafe.Line(trunc(c.Assignee, 24)), fmtTime(c.Updated), textsafe.Line(trunc(strings.Join(strings.Fields(last), " "), 60)))
	}
	return tw.Flush()
}

// caseLine says where a case stands in one line.
func caseLine(c *archive.Case) string {
	who := "nobody"
	if c.Assignee != "" {
		who = c.Assignee
	}
	return textsafe.Line(fmt.Sprintf("%s on %s, assigned to %s, %d notes", c.Status, c.Recording, who, len(c.Notes)))
}

// printCase prints a case and its thread.
func printCase(e *env, c *archive.Case) {
	fmt.Fprintf(e.stdout, "case       %s\n", c.ID)
	fmt.Fprintf(e.stdout, "recording  %s\n", c.Recording)
	fmt.Fprintf(e.stdout, "status     %s\n", c.Status)
	who := c.Assignee
	if who == "" {
		who = "nobody"
	}
	fmt.Fprintf(e.stdout, "assignee   %s\n", textsafe.Line(who))
	opened := "by hand"
	if c.Flag != "" {
		opened = "by flag " + c.Flag
	}
	fmt.Fprintf(e.stdout, "opened     %s by %s, %s\n", fmtTime(c.Opened), textsafe.Line(c.OpenedBy), textsafe.Line(opened))
	fmt.Fprintf(e.stdout, "updated    %s\n", fmtTime(c.Updated))
	if len(c.Notes) == 0 {
		fmt.Fprintln(e.stdout, "no notes")
		return
	}
	fmt.Fprintln(e.stdout, "notes:")
	for _, n := range c.Notes {
		fmt.Fprintf(e.stdout, "  %s  %s\n", fmtTime(n.At), textsafe.Line(n.Who))
		for _, l := range strings.Split(n.Text, "\n") {
			fmt.Fprintf(e.stdout, "    %s\n", textsafe.Line(l))
		}
	}
}

package validate

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// WriteText writes one line per check in EKS Anywhere's style (a mark, the
// name, the message), with details and the remediation under a problem.
func WriteText(w io.Writer, results []Result) error {
	writeResults(w, results)
	_, err := fmt.Fprintln(w, Summary(results))
	return err
}

var marks = map[Status]string{Pass: "✅", Warn: "⚠️ ", Fail: "❌", Skipped: "⏭️ ", Error: "❗"}

func writeResults(w io.Writer, results []Result) {
	for _, r := range results {
		fmt.Fprintf(w, "%s %s: %s\n", marks[r.Status], r.Name, r.Message)
		if r.Status == Pass || r.Status == Skipped {
			continue
		}
		for _, d := range r.Details {
			fmt.Fprintf(w, "      %s\n", d)
		}
		if r.Remediation != "" {
			fmt.Fprintf(w, "      remediation: %s\n", r.Remediation)
		}
	}
}

// JSONAPIVersion names the schema of -o json. v2 has one shape for one spec
// and for several (v1 had results at the top for one spec and files for
// several).
const JSONAPIVersion = "eksa-metrics.validate/v2"

// JSONReport is the stable JSON schema of -o json: every spec validated,
// in input order (one for -f FILE), and the totals.
type JSONReport struct {
	APIVersion string       `json:"apiVersion"`
	Files      []FileReport `json:"files"`
	Summary    Counts       `json:"summary"`
}

// WriteJSON writes one spec's results as a JSONReport.
func WriteJSON(w io.Writer, file string, results []Result) error {
	return WriteFleetJSON(w, []FileReport{{File: file, Results: results}})
}

// JUnit XML, as Jenkins, GitLab and the GitHub Actions test reporters read it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	TestCases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// FileReport is one spec's results in a fleet run.
type FileReport struct {
	File    string   `json:"file"`
	Results []Result `json:"results"`
	Summary Counts   `json:"summary"`
}

// NotAdoptedReport is the report of a spec with no metrics section yet, in
// a fleet that adopts eksa-metrics cluster by cluster: its one result is a
// skipped spec-loads, not a failure.
func NotAdoptedReport(file, cluster string) FileReport {
	return FileReport{File: file, Results: []Result{{Name: "spec-loads", Status: Skipped,
		Message: fmt.Sprintf("cluster %q has no metrics section yet: eksa-metrics leaves it alone (add one to adopt it; docs/ci.md)", cluster)}}}
}

// NotAdopted: the report is a NotAdoptedReport.
func (r FileReport) NotAdopted() bool {
	return len(r.Results) == 1 && r.Results[0].Status == Skipped && r.Results[0].Name == "spec-loads"
}

// WriteFleetText writes one line for a spec whose checks all pass, else its
// problems with their details and counts; then the fleet's totals.
func WriteFleetText(w io.Writer, reports []FileReport) error {
	var all []Result
	for _, r := range reports {
		s := Summary(r.Results)
		if r.NotAdopted() {
			fmt.Fprintf(w, "⏭  %s: not adopted: %s\n", r.File, r.Results[0].Message)
		} else if s.Fail == 0 && s.Error == 0 && s.Warn == 0 {
			fmt.Fprintf(w, "✅ %s: %s\n", r.File, s)
		} else {
			fmt.Fprintf(w, "== %s: %s\n", r.File, s)
			var problems []Result
			for _, res := range r.Results {
				if res.Status == Fail || res.Status == Warn || res.Status == Error {
					problems = append(problems, res)
				}
			}
			writeResults(w, problems)
		}
		all = append(all, r.Results...)
	}
	_, err := fmt.Fprintf(w, "%d specs: %s\n", len(reports), Summary(all))
	return err
}

// WriteFleetJSON writes the specs' results as a JSONReport.
func WriteFleetJSON(w io.Writer, reports []FileReport) error {
	var all []Result
	for i := range reports {
		reports[i].Summary = Summary(reports[i].Results)
		all = append(all, reports[i].Results...)
	}
	b, err := json.MarshalIndent(JSONReport{APIVersion: JSONAPIVersion, Files: reports, Summary: Summary(all)}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteFleetJUnit writes one testsuite per file.
func WriteFleetJUnit(w io.Writer, reports []FileReport) error {
	doc := junitSuites{Name: "eksa-metrics validate"}
	for _, r := range reports {
		js := junitSuiteOf("eksa-metrics validate "+r.File, r.Results)
		doc.Suites = append(doc.Suites, js)
		doc.Tests += js.Tests
		doc.Failures += js.Failures
		doc.Errors += js.Errors
		doc.Skipped += js.Skipped
	}
	return encodeJUnit(w, doc)
}

// WriteJUnit writes the results as JUnit XML; a warning is a passing test
// case with its message in system-out.
func WriteJUnit(w io.Writer, suite string, results []Result) error {
	js := junitSuiteOf(suite, results)
	return encodeJUnit(w, junitSuites{Name: "eksa-metrics validate", Tests: js.Tests, Failures: js.Failures, Errors: js.Errors, Skipped: js.Skipped, Suites: []junitSuite{js}})
}

func junitSuiteOf(suite string, results []Result) junitSuite {
	s := Summary(results)
	js := junitSuite{Name: suite, Tests: len(results), Failures: s.Fail, Errors: s.Error, Skipped: s.Skipped}
	for _, r := range results {
		body := strings.Join(r.Details, "\n")
		if r.Remediation != "" {
			body = strings.TrimSpace(body + "\nremediation: " + r.Remediation)
		}
		c := junitCase{Name: r.Name, ClassName: "eksa-metrics.validate"}
		switch r.Status {
		case Fail:
			c.Failure = &junitProblem{Message: r.Message, Type: "fail", Text: body}
		case Error:
			c.Error = &junitProblem{Message: r.Message, Type: "error", Text: body}
		case Skipped:
			c.Skipped = &junitProblem{Message: r.Message}
		case Warn:
			// A warning is no pass: CI systems show a skipped case with
			// its message (GitHub check runs, GitLab, Jenkins), and a
			// passing one not at all. The details name file and line.
			c.Skipped = &junitProblem{Message: "WARNING: " + r.Message, Text: body}
			js.Skipped++
		default:
			c.SystemOut = r.Message
		}
		js.TestCases = append(js.TestCases, c)
	}
	return js
}

func encodeJUnit(w io.Writer, doc junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

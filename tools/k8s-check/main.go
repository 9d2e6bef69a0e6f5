// Command k8s-check decodes Kubernetes manifests as the API server would take them with strict field validation
// (kubectl apply --validate=strict): every built-in object into its k8s.io/api type, refusing unknown, misspelt
// and duplicate fields and wrong types; every custom resource against the OpenAPI schema of its
// CustomResourceDefinition, with the API server's own pruning, defaulting, schema and CEL validation; and every
// CustomResourceDefinition with the API server's CRD validation. It needs no cluster.
//
//	k8s-check [--crds DIR]... PATH...
//
// PATH is a YAML file or a folder (read recursively, *.yaml and *.yml). --crds names a folder of CRDs to check
// custom resources against (Strimzi's, for example); CRDs among the checked files count too. It prints one line
// per object, "ok" or "FAIL" with every error, and exits 1 if any object failed, 2 on a usage or set-up error.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

type dirList []string

func (d *dirList) String() string     { return strings.Join(*d, ",") }
func (d *dirList) Set(v string) error { *d = append(*d, v); return nil }

func main() {
	var crdDirs dirList
	flags := flag.NewFlagSet("k8s-check", flag.ContinueOnError)
	flags.Var(&crdDirs, "crds", "a folder of CustomResourceDefinitions to check custom resources against (repeatable)")
	flags.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: k8s-check [--crds DIR]... PATH...")
		flags.PrintDefaults()
	}
	if err := flags.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if flags.NArg() == 0 {
		flags.Usage()
		os.Exit(2)
	}

	checker := newChecker()
	for _, dir := range crdDirs {
		docs, err := readPaths([]string{dir})
		if err != nil {
			fmt.Fprintf(os.Stderr, "k8s-check: %v\n", err)
			os.Exit(2)
		}
		for _, doc := range docs {
			if errs := checker.addCRD(doc); len(errs) > 0 {
				fmt.Fprintf(os.Stderr, "k8s-check: %s: not a valid CustomResourceDefinition: %s\n", doc.where(), strings.Join(errs, "; "))
				os.Exit(2)
			}
		}
	}

	docs, err := readPaths(flags.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "k8s-check: %v\n", err)
		os.Exit(2)
	}
	// CRDs first, so custom resources in the same files are checked against them.
	for _, doc := range docs {
		if doc.isCRD() {
			doc.errs = checker.addCRD(doc)
			doc.checkedAs = "k8s.io/apiextensions-apiserver CRD validation, strict"
		}
	}
	failed := 0
	for _, doc := range docs {
		if !doc.isCRD() {
			doc.checkedAs, doc.errs = checker.check(doc)
		}
		if len(doc.errs) > 0 {
			failed++
			fmt.Printf("FAIL %s %s: %s\n", doc.where(), doc.describe(), strings.Join(doc.errs, "; "))
		} else {
			fmt.Printf("ok   %s %s: %s\n", doc.where(), doc.describe(), doc.checkedAs)
		}
	}
	fmt.Printf("%d objects, %d failed\n", len(docs), failed)
	if failed > 0 {
		os.Exit(1)
	}
}

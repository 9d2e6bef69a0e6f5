package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// document is one YAML document of a manifest file, as kubectl splits a file at "---" lines.
type document struct {
	file string
	line int // where the document starts, 1-based
	json []byte
	head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	checkedAs string
	errs      []string
}

func (d *document) where() string { return fmt.Sprintf("%s:%d", d.file, d.line) }

func (d *document) describe() string {
	name := d.head.Metadata.Name
	if d.head.Metadata.Namespace != "" {
		name = d.head.Metadata.Namespace + "/" + name
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", d.head.APIVersion, d.head.Kind, name))
}

func (d *document) isCRD() bool {
	return d.head.Kind == "CustomResourceDefinition" && strings.HasPrefix(d.head.APIVersion, "apiextensions.k8s.io/")
}

// readPaths reads every *.yaml and *.yml file named or found below the folders named, in a stable order.
func readPaths(paths []string) ([]*document, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, entry fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !entry.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(files)
	var docs []*document
	for _, file := range files {
		fileDocs, err := readFile(file)
		if err != nil {
			return nil, err
		}
		docs = append(docs, fileDocs...)
	}
	return docs, nil
}

func readFile(file string) ([]*document, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	chunks, err := splitDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var docs []*document
	for _, c := range chunks {
		doc := &document{file: file, line: c.line}
		// YAMLToJSONStrict refuses duplicate keys, as the API server's strict decoding does.
		doc.json, err = yaml.YAMLToJSONStrict(c.text)
		if err != nil {
			doc.errs = append(doc.errs, "not valid YAML: "+err.Error())
			docs = append(docs, doc)
			continue
		}
		if string(bytes.TrimSpace(doc.json)) == "null" {
			continue // only comments, or empty
		}
		if err := yaml.Unmarshal(c.text, &doc.head); err != nil {
			doc.errs = append(doc.errs, "not an object: "+err.Error())
		}
		docs = append(docs, doc)
	}
	return docs, nil
}

type chunk struct {
	line int // of the document's first line of content, 1-based
	text []byte
}

// splitDocuments splits a file at "---" lines as kubectl does (k8s.io/apimachinery/pkg/util/yaml.YAMLReader):
// only spaces or a comment may follow the separator. Each chunk remembers its first line of content.
func splitDocuments(data []byte) ([]chunk, error) {
	var chunks []chunk
	var current bytes.Buffer
	first := 0
	flush := func() {
		if current.Len() > 0 && first > 0 {
			chunks = append(chunks, chunk{line: first, text: append([]byte(nil), current.Bytes()...)})
		}
		current.Reset()
		first = 0
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		if strings.HasPrefix(line, "---") {
			rest := strings.TrimSpace(line[3:])
			if rest != "" && !strings.HasPrefix(rest, "#") {
				return nil, fmt.Errorf("line %d: only a comment may follow a document separator", n)
			}
			flush()
			continue
		}
		if t := strings.TrimSpace(line); first == 0 && t != "" && !strings.HasPrefix(t, "#") {
			first = n
		}
		current.WriteString(line)
		current.WriteByte('\n')
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	flush()
	return chunks, nil
}

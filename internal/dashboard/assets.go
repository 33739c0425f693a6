package dashboard

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
)

//go:embed static
var staticFiles embed.FS

// asset is one embedded file, served from memory.
type asset struct {
	body        []byte
	contentType string
	version     string // a hash of body: links carry it, so a new binary's files are fetched anew
}

type assetSet struct {
	byName map[string]asset
}

func loadAssets() (*assetSet, error) {
	set := &assetSet{byName: map[string]asset{}}
	err := fs.WalkDir(staticFiles, "static", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		body, err := staticFiles.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		set.byName[path.Base(p)] = asset{body: body, contentType: ct, version: hex.EncodeToString(sum[:6])}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load assets: %w", err)
	}
	return set, nil
}

// url is the versioned address of an asset, for the templates.
func (s *assetSet) url(name string) (string, error) {
	a, ok := s.byName[name]
	if !ok {
		return "", fmt.Errorf("no asset %q", name)
	}
	return "/assets/" + name + "?v=" + a.version, nil
}

// serveAsset answers GET /assets/{file}. A request naming the current version may be
// cached for good; any other is revalidated by its ETag.
func (d *Dashboard) serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := d.assets.byName[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	etag := `"` + a.version + `"`
	h.Set("ETag", etag)
	if r.URL.Query().Get("v") == a.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", a.contentType)
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
}

package digest

import (
	"fmt"
	"os"
	"unicode"

	"golang.org/x/image/font/opentype"
	"golang.org/x/image/font/sfnt"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
)

// fonts is the typeface every text of a chart is drawn with: Liberation
// Sans (embedded in gonum/plot) by default, or the font file the caller
// named. It is per chart, never plot's global default, so that charts
// with different fonts may be drawn at the same time.
type fonts struct {
	font    font.Font
	handler text.Handler
	face    *opentype.Font
}

// defaultFonts uses Liberation Sans, which plot registers in
// font.DefaultCache when it is loaded.
func defaultFonts() fonts {
	f := font.Font{Typeface: "Liberation", Variant: "Sans"}
	return fonts{font: f, handler: plot.DefaultTextHandler, face: font.DefaultCache.Lookup(f, 12).Face}
}

// loadFonts reads the TTF or OTF file at path ("" for the default). A
// font collection (.ttc) is refused: sfnt cannot read one as a single font.
func loadFonts(path string) (fonts, error) {
	if path == "" {
		return defaultFonts(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fonts{}, fmt.Errorf("digest: reading the font: %w", err)
	}
	face, err := opentype.Parse(b)
	if err != nil {
		return fonts{}, fmt.Errorf("digest: font %s: %w (use a .ttf or .otf file, not a .ttc collection)", path, err)
	}
	f := font.Font{Typeface: "gpucal-digest"}
	cache := font.NewCache(font.Collection{{Font: f, Face: face}})
	return fonts{font: f, handler: text.Plain{Fonts: cache}, face: face}, nil
}

// style returns a text style of this typeface at size points.
func (f fonts) style(size font.Length) text.Style {
	fnt := f.font
	fnt.Size = size
	return text.Style{Font: fnt, Handler: f.handler}
}

// apply makes every text of p use this typeface, keeping the sizes.
func (f fonts) apply(p *plot.Plot) {
	for _, s := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		size := s.Font.Size
		s.Font = f.font
		s.Font.Size = size
		s.Handler = f.handler
	}
}

// canDraw reports whether the typeface has a glyph for every character
// of s (gonum/plot silently drops the ones it lacks).
func (f fonts) canDraw(s string) bool {
	if f.face == nil {
		return false
	}
	var buf sfnt.Buffer
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
		if r == ' ' {
			continue
		}
		if i, err := f.face.GlyphIndex(&buf, r); err != nil || i == 0 {
			return false
		}
	}
	return true
}

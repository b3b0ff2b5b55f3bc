package bundle

// Info keys: the vocabulary of the info section (docs/BUNDLE.md, "15.
// info"). Training writes them; the fleet, its console and tritctl read
// them. Agents ignore the section, so a key may be added without a new
// format; a key's meaning never changes.
const (
	InfoRead        = "read"               // how the training file was read (data.ReadSpec text, without the feature names: the compat section has them)
	InfoRows        = "train.rows"         // training rows
	InfoClassCounts = "train.class_counts" // rows per class, comma-separated decimal counts in class order
	InfoValidation  = "train.validation"   // how candidates were validated
	InfoBalanced    = "train.balanced"     // validation balanced accuracy of the chosen model, percent
	InfoStructure   = "train.structure"    // thresholds, projection, p, weights
)

package training

// Seed offsets. Every random choice of training derives from Config.Seed
// XORed with one of these, so each stream is named, the streams differ from
// one another, and a model depends on nothing but its Config and data.
const (
	seedValidation = 0x5eed  // the random validation split and stratified folds
	seedRoundRows  = 0x5ab   // the rows of the search's smaller fits
	seedFitRows    = 0xf17   // the MaxFitRows subsample of the final fit
	seedScaledRows = 0x5ca1e // the rows thresholds and the projection are fitted on
	seedProjection = 0x9ca   // the rows of the principal directions
	seedTreeRows   = 0x7ee5  // the rows trees are boosted on
	seedInit       = 0x1417  // the initialising linear SVM's rows and random starts
	seedRowsPrint  = 0xf1a9  // the rows of the drift fingerprint
	seedSigma      = 0x516a  // the pairs of rows of the median distance (σ's grid)
)

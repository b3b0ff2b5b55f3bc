package fleet

import "github.com/trit-iot/trit/api"

// The API's types are defined once, in package api, which tritctl shares;
// these names keep the service's code reading as before.

type (
	RolloutState   = api.RolloutState
	DeviceState    = api.DeviceState
	Phase          = api.Phase
	Rate           = api.Rate
	Pace           = api.Pace
	AbortPolicy    = api.AbortPolicy
	DeviceProgress = api.DeviceProgress
	RolloutRequest = api.RolloutRequest
	JobRecord      = api.JobRecord
	BundleInfo     = api.BundleInfo
	TrainRequest   = api.TrainRequest
	TrainState     = api.TrainState
	TrainJob       = api.TrainJob
	ShadowPolicy   = api.ShadowPolicy
	PlanRequest    = api.PlanRequest
	PlanResult     = api.PlanResult
	DevicePlan     = api.DevicePlan
)

// Rollout states.
const (
	RolloutRunning   = api.RolloutRunning
	RolloutPaused    = api.RolloutPaused
	RolloutAborted   = api.RolloutAborted
	RolloutCompleted = api.RolloutCompleted
	RolloutFailed    = api.RolloutFailed
)

// Device states in a rollout.
const (
	DevicePending      = api.DevicePending
	DeviceNotified     = api.DeviceNotified
	DeviceQueued       = api.DeviceQueued
	DeviceDownloading  = api.DeviceDownloading
	DeviceInstalling   = api.DeviceInstalling
	DeviceSucceeded    = api.DeviceSucceeded
	DeviceFailed       = api.DeviceFailed
	DeviceRejected     = api.DeviceRejected
	DeviceTimedOut     = api.DeviceTimedOut
	DeviceShadowing    = api.DeviceShadowing
	DeviceShadowPassed = api.DeviceShadowPassed
	DeviceGateFailed   = api.DeviceGateFailed
	StageShadow        = api.StageShadow
	StagePromote       = api.StagePromote
)

// Failure kinds, for abort criteria and retries.
const (
	FailureFailed   = api.FailureFailed
	FailureRejected = api.FailureRejected
	FailureTimedOut = api.FailureTimedOut
	FailureAny      = api.FailureAny
)

// Training job states.
const (
	TrainQueued    = api.TrainQueued
	TrainRunning   = api.TrainRunning
	TrainSucceeded = api.TrainSucceeded
	TrainFailed    = api.TrainFailed
	TrainCancelled = api.TrainCancelled
)

package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// collJobs holds background job records, as upstream's "jobs".
const collJobs = "jobs"

// JobTypeDeleteOrg is the type of an org deletion job (upstream's
// "delete-org").
const JobTypeDeleteOrg = "delete-org"

// BackgroundJob is the record of a background job, as upstream stores it
// in "jobs". Success is nil while the job runs (or waits to be resumed),
// then true or false; a retry moves the attempt to PreviousAttempts.
type BackgroundJob struct {
	ID               string       `bson:"_id"`
	Type             string       `bson:"type"`
	OID              uuid.UUID    `bson:"oid"`
	Success          *bool        `bson:"success"`
	Started          time.Time    `bson:"started"`
	Finished         *time.Time   `bson:"finished"`
	PreviousAttempts []JobAttempt `bson:"previousAttempts"`
	// OrgStorage is where the org kept its files when its deletion began:
	// a resumed job still empties it after the org document is gone.
	OrgStorage *Storage `bson:"orgStorage,omitempty"`
	// Failures counts the current attempt's failed tries (upstream's Job
	// pod retries): the runner gives the attempt up after a few.
	Failures int `bson:"failures,omitempty"`
}

// JobAttempt is an earlier attempt of a retried job.
type JobAttempt struct {
	Started  time.Time  `bson:"started"`
	Finished *time.Time `bson:"finished"`
}

// Errors of the org deletion and job routes.
var (
	errJobNotFound = NotFound("job_not_found")
	// ErrOrgBeingDeleted: a deletion of the org has begun already.
	ErrOrgBeingDeleted = Invalid("org_deletion_in_progress")
)

// deleteOrgJobID is upstream's id of an org deletion job:
// delete-org-<oid>-<10 hex digits>.
func deleteOrgJobID(oid uuid.UUID) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s-%s", JobTypeDeleteOrg, oid, hex.EncodeToString(b[:]))
}

// StartOrgDeletion records a new deletion job of org oid (unfinished:
// success null) and marks the org with it, so that a second deletion is
// refused while the org exists. The job record is written first: after a
// crash between the two writes the job still runs and removes the org.
//
// Errors: NotFound("org_not_found"); ErrOrgBeingDeleted if a deletion of
// the org has begun.
func (m *Mongo) StartOrgDeletion(ctx context.Context, oid uuid.UUID, now time.Time) (*BackgroundJob, error) {
	var org struct {
		Storage     Storage `bson:"storage"`
		DeletionJob string  `bson:"deletionJob"`
	}
	err := m.coll(collOrgs).FindOne(ctx, bson.M{"_id": oid},
		options.FindOne().SetProjection(bson.M{"storage": 1, "deletionJob": 1})).Decode(&org)
	if err != nil {
		return nil, notFoundOr(err, errOrgNotFound, "finding org")
	}
	if org.DeletionJob != "" {
		return nil, ErrOrgBeingDeleted
	}
	job := &BackgroundJob{ID: deleteOrgJobID(oid), Type: JobTypeDeleteOrg, OID: oid,
		Started: now.UTC().Truncate(time.Second), OrgStorage: &org.Storage}
	if _, err := m.coll(collJobs).InsertOne(ctx, job); err != nil {
		return nil, fmt.Errorf("inserting job: %w", err)
	}
	res, err := m.coll(collOrgs).UpdateOne(ctx, bson.M{"_id": oid, "deletionJob": bson.M{"$exists": false}},
		bson.M{"$set": bson.M{"deletionJob": job.ID}})
	if err == nil && res.MatchedCount == 1 {
		return job, nil
	}
	// Another deletion won, or the org went meanwhile: this job must not
	// run.
	if _, derr := m.coll(collJobs).DeleteOne(ctx, bson.M{"_id": job.ID}); derr != nil {
		return nil, errors.Join(err, fmt.Errorf("withdrawing job: %w", derr))
	}
	if err != nil {
		return nil, fmt.Errorf("marking org for deletion: %w", err)
	}
	if _, gerr := m.GetOrg(ctx, oid); gerr != nil {
		return nil, gerr
	}
	return nil, ErrOrgBeingDeleted
}

// GetJob returns the job record id.
//
// Errors: NotFound("job_not_found").
func (m *Mongo) GetJob(ctx context.Context, id string) (*BackgroundJob, error) {
	var j BackgroundJob
	if err := m.coll(collJobs).FindOne(ctx, bson.M{"_id": id}).Decode(&j); err != nil {
		return nil, notFoundOr(err, errJobNotFound, "finding job")
	}
	return &j, nil
}

// UnfinishedJobs returns the jobs of type typ whose success is still
// null, oldest first: those to run, or to resume after a crash.
//
// Errors: none of the store kinds.
func (m *Mongo) UnfinishedJobs(ctx context.Context, typ string) ([]BackgroundJob, error) {
	opts := options.Find().SetSort(bson.D{{Key: "started", Value: 1}, {Key: "_id", Value: 1}})
	return findAll[BackgroundJob](ctx, m.coll(collJobs), bson.M{"type": typ, "success": nil}, opts, "jobs")
}

// FinishJob records the end of job id's current attempt. Only an
// unfinished job changes: a job finished already keeps its outcome.
//
// Errors: NotFound("job_not_found").
func (m *Mongo) FinishJob(ctx context.Context, id string, success bool, at time.Time) error {
	res, err := m.coll(collJobs).UpdateOne(ctx, bson.M{"_id": id, "success": nil},
		bson.M{"$set": bson.M{"success": success, "finished": at.UTC().Truncate(time.Second)}})
	if err != nil {
		return fmt.Errorf("finishing job: %w", err)
	}
	if res.MatchedCount == 0 {
		_, err := m.GetJob(ctx, id)
		return err
	}
	return nil
}

// RecordJobFailure counts a failed try of job id's current attempt and,
// at the maxTries-th, ends the attempt unsuccessful. It reports whether
// it did. A job finished meanwhile keeps its outcome.
//
// Errors: NotFound("job_not_found").
func (m *Mongo) RecordJobFailure(ctx context.Context, id string, maxTries int, at time.Time) (gaveUp bool, err error) {
	var job BackgroundJob
	err = m.coll(collJobs).FindOneAndUpdate(ctx, bson.M{"_id": id, "success": nil}, bson.M{"$inc": bson.M{"failures": 1}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&job)
	if errors.Is(err, mongo.ErrNoDocuments) {
		_, err := m.GetJob(ctx, id)
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("counting a failed try of job: %w", err)
	}
	if job.Failures < maxTries {
		return false, nil
	}
	return true, m.FinishJob(ctx, id, false, at)
}

// RetryJob starts job id again: the failed attempt moves to
// previousAttempts, and success and finished are reset.
//
// Errors: NotFound("job_not_found"); Invalid("job_not_finished") while it
// runs; Invalid("job_already_succeeded").
func (m *Mongo) RetryJob(ctx context.Context, id string, now time.Time) error {
	job, err := m.GetJob(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case job.Success == nil:
		return Invalid("job_not_finished")
	case *job.Success:
		return Invalid("job_already_succeeded")
	}
	// $set of the whole list rather than $push: upstream stores null
	// before the first retry, which $push refuses.
	attempts := append(job.PreviousAttempts, JobAttempt{Started: job.Started, Finished: job.Finished})
	res, err := m.coll(collJobs).UpdateOne(ctx, bson.M{"_id": id, "success": false},
		bson.M{"$set": bson.M{"previousAttempts": attempts, "success": nil, "finished": nil,
			"started": now.UTC().Truncate(time.Second)}, "$unset": bson.M{"failures": ""}})
	if err != nil {
		return fmt.Errorf("retrying job: %w", err)
	}
	if res.MatchedCount == 0 {
		return Invalid("job_not_finished") // another retry won
	}
	return nil
}

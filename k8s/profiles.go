package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// ErrProfileJobNotFound is wrapped by launcher errors when a profile
// browser's ProfileJob does not exist (any more).
var ErrProfileJobNotFound = errors.New("profilejob not found")

// ProfileBrowserTTL is how long a profile browser lives after its launch
// or its last ping.
const ProfileBrowserTTL = 30 * time.Second

// ProfileRequest is everything needed to start one profile browser.
type ProfileRequest struct {
	// Spec is the browser; a nil ExpireTime means ProfileBrowserTTL from now.
	Spec trawlerv1.ProfileJobSpec
	// BaseProfileID, when set, is the profile the browser starts from.
	BaseProfileID string
	// ProxyID, when set, is the proxy the user chose, which the profile
	// saved from the browser records (LabelProxyID); Spec.ProxyID may be
	// the default proxy instead.
	ProxyID string
}

// LaunchProfileBrowser creates the ProfileJob profilejob-<id>. Launching
// one that exists already succeeds and leaves it unchanged.
func (l *Launcher) LaunchProfileBrowser(ctx context.Context, req ProfileRequest) error {
	spec := req.Spec
	if spec.ID == "" {
		return errors.New("launching profile browser: empty browser id")
	}
	if spec.ExpireTime == nil {
		t := metav1.NewTime(l.clock.Now().Add(ProfileBrowserTTL))
		spec.ExpireTime = &t
	}
	labels := map[string]string{
		LabelBrowser: spec.ID,
		LabelRole:    RoleJob,
		LabelProfile: "1",
		LabelOrg:     spec.OID,
		LabelUser:    spec.UserID,
	}
	if req.BaseProfileID != "" {
		labels[LabelBaseProfile] = req.BaseProfileID
	}
	if req.ProxyID != "" {
		labels[LabelProxyID] = req.ProxyID
	}
	pj := &trawlerv1.ProfileJob{
		ObjectMeta: metav1.ObjectMeta{Name: ProfileJobName(spec.ID), Namespace: l.namespace, Labels: labels},
		Spec:       spec,
	}
	_, err := l.trawler.TrawlerV1().ProfileJobs(l.namespace).Create(ctx, pj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating profile job %s: %w", pj.Name, err)
	}
	return nil
}

// GetProfileBrowser returns a browser's ProfileJob; the API reads its
// labels to check who may use it.
func (l *Launcher) GetProfileBrowser(ctx context.Context, browserID string) (*trawlerv1.ProfileJob, error) {
	name := ProfileJobName(browserID)
	pj, err := l.trawler.TrawlerV1().ProfileJobs(l.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading profile job %s: %w", name, ErrProfileJobNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading profile job %s: %w", name, err)
	}
	return pj, nil
}

// PingProfileBrowser keeps a browser alive for ProfileBrowserTTL more.
func (l *Launcher) PingProfileBrowser(ctx context.Context, browserID string) error {
	name := ProfileJobName(browserID)
	expire := metav1.NewTime(l.clock.Now().Add(ProfileBrowserTTL))
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"expireTime": expire}})
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	_, err = l.trawler.TrawlerV1().ProfileJobs(l.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("patching profile job %s: %w", name, ErrProfileJobNotFound)
	}
	if err != nil {
		return fmt.Errorf("patching profile job %s: %w", name, err)
	}
	return nil
}

// DeleteProfileBrowser deletes a browser's ProfileJob; its pod goes with it.
func (l *Launcher) DeleteProfileBrowser(ctx context.Context, browserID string) error {
	name := ProfileJobName(browserID)
	policy := metav1.DeletePropagationBackground
	err := l.trawler.TrawlerV1().ProfileJobs(l.namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting profile job %s: %w", name, ErrProfileJobNotFound)
	}
	if err != nil {
		return fmt.Errorf("deleting profile job %s: %w", name, err)
	}
	return nil
}

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProfileJob asks the operator to run one interactive browser in which a
// user prepares a browser profile. It expires unless pinged.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pjs,categories=trawler
// +kubebuilder:printcolumn:name="Expire At",type=string,JSONPath=`.spec.expireTime`
// +kubebuilder:printcolumn:name="Start Url",type=string,JSONPath=`.spec.startUrl`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProfileJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProfileJobSpec   `json:"spec"`
	Status ProfileJobStatus `json:"status,omitempty"`
}

// ProfileJobSpec describes the browser to run.
type ProfileJobSpec struct {
	// ID is the browser id ("prf-" + 10 hex characters). It is part of the
	// browser pod's name "browser-<id>", hence a short DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=55
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ID string `json:"id"`
	// UserID is the user the browser belongs to.
	UserID string `json:"userid,omitempty"`
	// OID is the organisation id.
	OID string `json:"oid"`
	// StorageName selects the storage secret "storage-<name>".
	StorageName string `json:"storageName,omitempty"`
	// StoragePath is STORE_PATH for the saved profile.
	StoragePath string `json:"storagePath,omitempty"`
	// StartURL is the page the browser opens.
	StartURL string `json:"startUrl"`
	// ProfileFilename, when set, is an existing profile to load.
	ProfileFilename string `json:"profileFilename,omitempty"`
	// VNCPassword protects the browser's VNC session.
	VNCPassword string `json:"vncPassword,omitempty"`
	// ExpireTime is when the browser is removed unless pinged again.
	ExpireTime *metav1.Time `json:"expireTime,omitempty"`
	// ProxyID names the configured crawler proxy the browser goes through
	// ("" for none), as for a crawl.
	// +kubebuilder:validation:MaxLength=63
	ProxyID string `json:"proxyId,omitempty"`
}

// ProfileJobStatus is what the operator observed.
type ProfileJobStatus struct {
	// Phase is the browser pod's phase.
	Phase string `json:"phase,omitempty"`
}

// ProfileJobList is a list of ProfileJobs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ProfileJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ProfileJob `json:"items"`
}

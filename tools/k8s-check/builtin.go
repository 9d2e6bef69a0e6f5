package main

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// The group versions a current cluster serves by default: the GA ones. Beta and removed versions (extensions/v1beta1
// Deployments, say) are left out on purpose, so a manifest that names one fails here as it would on the cluster.
var builtinGroups = []func(*runtime.Scheme) error{
	corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, autoscalingv1.AddToScheme,
	autoscalingv2.AddToScheme, policyv1.AddToScheme, rbacv1.AddToScheme, networkingv1.AddToScheme,
	storagev1.AddToScheme, schedulingv1.AddToScheme, coordinationv1.AddToScheme, discoveryv1.AddToScheme,
	admissionregistrationv1.AddToScheme, certificatesv1.AddToScheme, nodev1.AddToScheme, eventsv1.AddToScheme,
	flowcontrolv1.AddToScheme, apiextensionsv1.AddToScheme,
}

type builtins struct {
	scheme  *runtime.Scheme
	decoder runtime.Decoder
}

func newBuiltins() *builtins {
	scheme := runtime.NewScheme()
	for _, add := range builtinGroups {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	// EnableStrict: unknown and duplicate fields are errors, as with the API server's fieldValidation=Strict.
	codecs := serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	return &builtins{scheme: scheme, decoder: codecs.UniversalDeserializer()}
}

func (b *builtins) knows(gvk schema.GroupVersionKind) bool {
	return b.scheme.Recognizes(gvk) && gvk.Kind != "List" && !strings.HasSuffix(gvk.Kind, "List")
}

// decode decodes one object into its Go type, strictly.
func (b *builtins) decode(json []byte) (runtime.Object, []string) {
	obj, _, err := b.decoder.Decode(json, nil, nil)
	if err != nil {
		return nil, []string{err.Error()}
	}
	return obj, nil
}

func (b *builtins) describe(gvk schema.GroupVersionKind) string {
	t, ok := b.scheme.AllKnownTypes()[gvk]
	if !ok {
		return gvk.String()
	}
	return fmt.Sprintf("%s.%s, strict", t.PkgPath(), t.Name())
}

package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	crvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// crdVersion is what the API server builds from one served version of a CRD to decode and validate its objects.
type crdVersion struct {
	crd        string // the CRD's name and version, for messages
	namespaced bool
	structural *structuralschema.Structural
	validator  crvalidation.SchemaValidator
	cel        *cel.Validator
	scale      *apiextensions.CustomResourceSubresourceScale
}

type checker struct {
	builtins *builtins
	crds     map[schema.GroupVersionKind]*crdVersion
}

func newChecker() *checker {
	return &checker{builtins: newBuiltins(), crds: map[schema.GroupVersionKind]*crdVersion{}}
}

// addCRD decodes a CustomResourceDefinition strictly, validates it as the API server does on create, and
// registers its served versions.
func (c *checker) addCRD(doc *document) []string {
	if len(doc.errs) > 0 {
		return doc.errs
	}
	obj, errs := c.builtins.decode(doc.json)
	if len(errs) > 0 {
		return errs
	}
	v1crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return []string{fmt.Sprintf("%s is not an apiextensions.k8s.io/v1 CustomResourceDefinition", doc.describe())}
	}
	// Defaults first, as the API server applies them before it validates.
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1crd)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1crd, internal, nil); err != nil {
		return []string{err.Error()}
	}
	if fieldErrs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(fieldErrs) > 0 {
		return fieldMessages(fieldErrs)
	}
	for _, v := range internal.Spec.Versions {
		if !v.Served {
			continue
		}
		gvk := schema.GroupVersionKind{Group: internal.Spec.Group, Version: v.Name, Kind: internal.Spec.Names.Kind}
		// A schema (or subresources) shared by every version is kept once, at the top, in the internal form.
		validation, err := apiextensions.GetSchemaForVersion(internal, v.Name)
		if err != nil || validation == nil || validation.OpenAPIV3Schema == nil {
			return []string{fmt.Sprintf("version %s has no schema", v.Name)}
		}
		props := validation.OpenAPIV3Schema
		structural, err := structuralschema.NewStructural(props)
		if err != nil {
			return []string{fmt.Sprintf("version %s: %v", v.Name, err)}
		}
		validator, _, err := crvalidation.NewSchemaValidator(props)
		if err != nil {
			return []string{fmt.Sprintf("version %s: %v", v.Name, err)}
		}
		version := &crdVersion{
			crd:        internal.Name + " " + v.Name,
			namespaced: internal.Spec.Scope == apiextensions.NamespaceScoped,
			structural: structural,
			validator:  validator,
			cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
		}
		if subresources, err := apiextensions.GetSubresourcesForVersion(internal, v.Name); err == nil && subresources != nil {
			version.scale = subresources.Scale
		}
		c.crds[gvk] = version
	}
	return nil
}

// check decodes one object: a built-in one into its Go type, a custom resource against its CRD's schema.
func (c *checker) check(doc *document) (string, []string) {
	if len(doc.errs) > 0 {
		return "", doc.errs
	}
	gv, err := schema.ParseGroupVersion(doc.head.APIVersion)
	if err != nil || doc.head.APIVersion == "" || doc.head.Kind == "" {
		return "", []string{fmt.Sprintf("apiVersion %q and kind %q do not name a type", doc.head.APIVersion, doc.head.Kind)}
	}
	gvk := gv.WithKind(doc.head.Kind)
	if c.builtins.knows(gvk) {
		_, errs := c.builtins.decode(doc.json)
		return c.builtins.describe(gvk), errs
	}
	if version, ok := c.crds[gvk]; ok {
		return fmt.Sprintf("CRD %s: schema, CEL rules, strict", version.crd), version.validate(doc.json)
	}
	return "", []string{fmt.Sprintf("no type and no CustomResourceDefinition known for %s (a misspelt kind or apiVersion, a version the cluster does not serve, or a CRD not given with --crds)", gvk)}
}

// validate follows the API server's path for a custom resource created with fieldValidation=Strict
// (k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go and pkg/registry/customresource).
func (v *crdVersion) validate(data []byte) []string {
	var object map[string]interface{}
	// utiljson keeps integers as int64, as the API server's unstructured decoding does.
	if err := utiljson.Unmarshal(data, &object); err != nil {
		return []string{err.Error()}
	}
	var errs []string

	// Decoding: unknown fields in metadata, then below the root (pruning), then in embedded resources.
	_, _, unknownMeta, err := schemaobjectmeta.GetObjectMetaWithOptions(object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return []string{err.Error()}
	}
	unknown := append([]string(nil), unknownMeta...)
	unknown = append(unknown, structuralpruning.PruneWithOptions(object, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(object, v.structural)
	coerceErr, unknownEmbedded := schemaobjectmeta.CoerceWithOptions(nil, object, v.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if coerceErr != nil {
		errs = append(errs, coerceErr.Error())
	}
	unknown = append(unknown, unknownEmbedded...)
	if len(unknown) > 0 {
		sort.Strings(unknown)
		quoted := make([]string, len(unknown))
		for i, u := range unknown {
			quoted[i] = fmt.Sprintf("unknown field %q", u)
		}
		// The API server's wording for fieldValidation=Strict.
		errs = append(errs, "strict decoding error: "+strings.Join(quoted, ", "))
	}
	structuraldefaulting.Default(object, v.structural)

	// Validation, as on create.
	u := &unstructured.Unstructured{Object: object}
	var fieldErrs field.ErrorList
	fieldErrs = append(fieldErrs, metavalidation.ValidateObjectMetaAccessor(u, v.namespaced, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	fieldErrs = append(fieldErrs, crvalidation.ValidateCustomResource(nil, object, v.validator)...)
	fieldErrs = append(fieldErrs, v.validateScale(u)...)
	fieldErrs = append(fieldErrs, schemaobjectmeta.Validate(context.Background(), nil, object, v.structural, false)...)
	fieldErrs = append(fieldErrs, listtype.ValidateListSetsAndMaps(nil, v.structural, object)...)
	if v.cel != nil && len(fieldErrs) == 0 {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, object, nil, celconfig.RuntimeCELCostBudget)
		fieldErrs = append(fieldErrs, celErrs...)
	}
	return append(errs, fieldMessages(fieldErrs)...)
}

func (v *crdVersion) validateScale(u *unstructured.Unstructured) field.ErrorList {
	if v.scale == nil {
		return nil
	}
	path := strings.TrimPrefix(v.scale.SpecReplicasPath, ".")
	replicas, found, err := unstructured.NestedFieldNoCopy(u.Object, strings.Split(path, ".")...)
	if err != nil || !found {
		return nil
	}
	if n, ok := replicas.(int64); !ok || n < 0 {
		return field.ErrorList{field.Invalid(field.NewPath(v.scale.SpecReplicasPath), replicas, "should be a non-negative integer")}
	}
	return nil
}

func fieldMessages(list field.ErrorList) []string {
	out := make([]string, 0, len(list))
	for _, e := range list {
		out = append(out, e.Error())
	}
	return out
}

"""OpenAPI v3 schemas of the built-in kinds the emulator serves, written as kube-openapi publishes them.

They carry what the Go types' markers say and what clients and the server act on: `x-kubernetes-list-type`
/ `-list-map-keys` / `-map-type` (server-side apply), `x-kubernetes-patch-strategy` / `-patch-merge-key`
(strategic merge patch, computed by kubectl from /openapi/v3 and applied by the server), field types
(typed decoding) and the set of known fields (strict field validation). Deep, rarely written parts of the
pod template keep unknown fields (`x-kubernetes-preserve-unknown-fields`) instead of a full PodSpec.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer", "format": "int32"}
INT64: Schema = {"type": "integer", "format": "int64"}
BOOLEAN: Schema = {"type": "boolean"}
TIME: Schema = {"type": "string", "format": "date-time"}
MICRO_TIME: Schema = {"type": "string", "format": "date-time", "x-emulator-time": "micro"}
INT_OR_STRING: Schema = {"x-kubernetes-int-or-string": True}
ANY_OBJECT: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def obj(*, atomic: bool = False, preserve: bool = False, **props: Any) -> Schema:
    schema: Schema = {"type": "object", "properties": props}
    if atomic:
        schema["x-kubernetes-map-type"] = "atomic"
    if preserve:
        schema["x-kubernetes-preserve-unknown-fields"] = True
    return schema


def string_map(*, atomic: bool = False) -> Schema:
    schema: Schema = {"type": "object", "additionalProperties": STRING}
    if atomic:
        schema["x-kubernetes-map-type"] = "atomic"
    return schema


def atomic_list(items: Schema) -> Schema:
    return {"type": "array", "items": items, "x-kubernetes-list-type": "atomic"}


def map_list(items: Schema, *keys: str, merge_key: str = "", retain_keys: bool = False) -> Schema:
    """A list keyed by `keys` (server-side apply); strategic merge patch merges it by `merge_key`."""
    schema: Schema = {
        "type": "array",
        "items": items,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": list(keys),
    }
    if merge_key:
        schema["x-kubernetes-patch-merge-key"] = merge_key
        schema["x-kubernetes-patch-strategy"] = "merge,retainKeys" if retain_keys else "merge"
    return schema


def merge_set(items: Schema) -> Schema:
    return {
        "type": "array",
        "items": items,
        "x-kubernetes-list-type": "set",
        "x-kubernetes-patch-strategy": "merge",
    }


STRINGS = atomic_list(STRING)

OWNER_REFERENCE = obj(
    apiVersion=STRING, kind=STRING, name=STRING, uid=STRING, controller=BOOLEAN, blockOwnerDeletion=BOOLEAN
)
MANAGED_FIELDS_ENTRY = obj(
    manager=STRING,
    operation=STRING,
    apiVersion=STRING,
    time=TIME,
    fieldsType=STRING,
    fieldsV1=ANY_OBJECT,
    subresource=STRING,
)
OBJECT_META = obj(
    name=STRING,
    generateName=STRING,
    namespace=STRING,
    selfLink=STRING,
    uid=STRING,
    resourceVersion=STRING,
    generation=INT64,
    creationTimestamp=TIME,
    deletionTimestamp=TIME,
    deletionGracePeriodSeconds=INT64,
    labels=string_map(),
    annotations=string_map(),
    ownerReferences=map_list(OWNER_REFERENCE, "uid", merge_key="uid"),
    finalizers=merge_set(STRING),
    managedFields=atomic_list(MANAGED_FIELDS_ENTRY),
)
OBJECT_REFERENCE = obj(
    atomic=True,
    kind=STRING,
    namespace=STRING,
    name=STRING,
    uid=STRING,
    apiVersion=STRING,
    resourceVersion=STRING,
    fieldPath=STRING,
)
LOCAL_OBJECT_REFERENCE = obj(atomic=True, name=STRING)
LABEL_SELECTOR = obj(
    atomic=True,
    matchLabels=string_map(),
    matchExpressions=atomic_list(obj(key=STRING, operator=STRING, values=STRINGS)),
)
CONDITIONS = map_list(
    obj(
        type=STRING,
        status=STRING,
        observedGeneration=INT64,
        lastTransitionTime=TIME,
        lastUpdateTime=TIME,
        reason=STRING,
        message=STRING,
    ),
    "type",
    merge_key="type",
)


def kind_schema(**props: Schema) -> Schema:
    schema = obj(apiVersion=STRING, kind=STRING, metadata=OBJECT_META)
    schema["properties"].update(props)
    return schema


# ------------------------------------------------------------------------------------------------- core
NAMESPACE = kind_schema(
    spec=obj(finalizers=STRINGS),
    status=obj(phase=STRING, conditions=CONDITIONS),
)
SECRET = kind_schema(data=string_map(), stringData=string_map(), type=STRING, immutable=BOOLEAN)
CONFIG_MAP = kind_schema(data=string_map(), binaryData=string_map(), immutable=BOOLEAN)
SERVICE_ACCOUNT = kind_schema(
    secrets=map_list(OBJECT_REFERENCE, "name", merge_key="name"),
    imagePullSecrets=atomic_list(LOCAL_OBJECT_REFERENCE),
    automountServiceAccountToken=BOOLEAN,
)
SERVICE_PORT = obj(
    name=STRING, protocol=STRING, appProtocol=STRING, port=INTEGER, targetPort=INT_OR_STRING, nodePort=INTEGER
)
SERVICE = kind_schema(
    spec=obj(
        preserve=True,
        ports=map_list(SERVICE_PORT, "port", "protocol", merge_key="port"),
        selector=string_map(atomic=True),
        clusterIP=STRING,
        clusterIPs=STRINGS,
        type=STRING,
        externalIPs=STRINGS,
        sessionAffinity=STRING,
        loadBalancerIP=STRING,
        loadBalancerSourceRanges=STRINGS,
        externalName=STRING,
        externalTrafficPolicy=STRING,
        internalTrafficPolicy=STRING,
        publishNotReadyAddresses=BOOLEAN,
        ipFamilies=STRINGS,
        ipFamilyPolicy=STRING,
    ),
    status=ANY_OBJECT,
)
EVENT_SOURCE = obj(component=STRING, host=STRING)
EVENT_SERIES = obj(count=INTEGER, lastObservedTime=MICRO_TIME)
EVENT = kind_schema(
    involvedObject=OBJECT_REFERENCE,
    reason=STRING,
    message=STRING,
    source=EVENT_SOURCE,
    firstTimestamp=TIME,
    lastTimestamp=TIME,
    count=INTEGER,
    type=STRING,
    eventTime=MICRO_TIME,
    series=EVENT_SERIES,
    action=STRING,
    related=OBJECT_REFERENCE,
    reportingComponent=STRING,
    reportingInstance=STRING,
)
# events.k8s.io/v1: the same stored object under other field names (see events.py).
EVENTS_V1_EVENT = kind_schema(
    eventTime=MICRO_TIME,
    series=EVENT_SERIES,
    reportingController=STRING,
    reportingInstance=STRING,
    action=STRING,
    reason=STRING,
    regarding=OBJECT_REFERENCE,
    related=OBJECT_REFERENCE,
    note=STRING,
    type=STRING,
    deprecatedSource=EVENT_SOURCE,
    deprecatedFirstTimestamp=TIME,
    deprecatedLastTimestamp=TIME,
    deprecatedCount=INTEGER,
)

# ------------------------------------------------------------------------------------------ coordination
LEASE = kind_schema(
    spec=obj(
        holderIdentity=STRING,
        leaseDurationSeconds=INTEGER,
        acquireTime=MICRO_TIME,
        renewTime=MICRO_TIME,
        leaseTransitions=INTEGER,
        strategy=STRING,
        preferredHolder=STRING,
    )
)

# ------------------------------------------------------------------------------------------------- rbac
POLICY_RULE = obj(
    verbs=STRINGS, apiGroups=STRINGS, resources=STRINGS, resourceNames=STRINGS, nonResourceURLs=STRINGS
)
ROLE = kind_schema(rules=atomic_list(POLICY_RULE))
CLUSTER_ROLE = kind_schema(
    rules=atomic_list(POLICY_RULE),
    aggregationRule=obj(clusterRoleSelectors=atomic_list(LABEL_SELECTOR)),
)
SUBJECT = obj(kind=STRING, apiGroup=STRING, name=STRING, namespace=STRING)
ROLE_REF = obj(atomic=True, apiGroup=STRING, kind=STRING, name=STRING)
ROLE_BINDING = kind_schema(subjects=atomic_list(SUBJECT), roleRef=ROLE_REF)

# ------------------------------------------------------------------------------------------------- apps
CONTAINER = obj(
    preserve=True,
    name=STRING,
    image=STRING,
    imagePullPolicy=STRING,
    command=STRINGS,
    args=STRINGS,
    workingDir=STRING,
    ports=map_list(
        obj(name=STRING, containerPort=INTEGER, protocol=STRING, hostIP=STRING, hostPort=INTEGER),
        "containerPort",
        "protocol",
        merge_key="containerPort",
    ),
    env=map_list(obj(preserve=True, name=STRING, value=STRING), "name", merge_key="name"),
    envFrom=atomic_list(ANY_OBJECT),
    volumeMounts=map_list(
        obj(preserve=True, name=STRING, mountPath=STRING, readOnly=BOOLEAN, subPath=STRING),
        "mountPath",
        merge_key="mountPath",
    ),
    resources=obj(preserve=True, limits=string_map(), requests=string_map()),
    livenessProbe=ANY_OBJECT,
    readinessProbe=ANY_OBJECT,
    startupProbe=ANY_OBJECT,
    securityContext=ANY_OBJECT,
)
POD_SPEC = obj(
    preserve=True,
    containers=map_list(CONTAINER, "name", merge_key="name"),
    initContainers=map_list(CONTAINER, "name", merge_key="name"),
    volumes=map_list(obj(preserve=True, name=STRING), "name", merge_key="name", retain_keys=True),
    imagePullSecrets=map_list(LOCAL_OBJECT_REFERENCE, "name", merge_key="name"),
    serviceAccountName=STRING,
    nodeSelector=string_map(atomic=True),
    tolerations=atomic_list(ANY_OBJECT),
    securityContext=ANY_OBJECT,
    restartPolicy=STRING,
    terminationGracePeriodSeconds=INT64,
    dnsPolicy=STRING,
    schedulerName=STRING,
)
POD_TEMPLATE = obj(metadata=OBJECT_META, spec=POD_SPEC)
DEPLOYMENT = kind_schema(
    spec=obj(
        replicas=INTEGER,
        selector=LABEL_SELECTOR,
        template=POD_TEMPLATE,
        strategy={
            **obj(type=STRING, rollingUpdate=obj(maxUnavailable=INT_OR_STRING, maxSurge=INT_OR_STRING)),
            "x-kubernetes-patch-strategy": "retainKeys",
        },
        minReadySeconds=INTEGER,
        revisionHistoryLimit=INTEGER,
        paused=BOOLEAN,
        progressDeadlineSeconds=INTEGER,
    ),
    status=obj(
        preserve=True,
        observedGeneration=INT64,
        replicas=INTEGER,
        updatedReplicas=INTEGER,
        readyReplicas=INTEGER,
        availableReplicas=INTEGER,
        unavailableReplicas=INTEGER,
        conditions=CONDITIONS,
    ),
)

# ----------------------------------------------------------------------------------------------- policy
POD_DISRUPTION_BUDGET = kind_schema(
    spec=obj(
        minAvailable=INT_OR_STRING,
        maxUnavailable=INT_OR_STRING,
        selector=LABEL_SELECTOR,
        unhealthyPodEvictionPolicy=STRING,
    ),
    status=obj(
        preserve=True,
        observedGeneration=INT64,
        currentHealthy=INTEGER,
        desiredHealthy=INTEGER,
        disruptionsAllowed=INTEGER,
        expectedPods=INTEGER,
        conditions=CONDITIONS,
    ),
)

CRD_SCHEMA = kind_schema(spec=ANY_OBJECT, status=ANY_OBJECT)

// Debian's libxml2 is built with ICU; its encoding.h would pull the system ICU headers, whose UErrorCode clashes
// with Foundation's private _FoundationICU module. Reading xmlversion.h first and undefining the ICU switch keeps
// ICU out of this module.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/xmlreader.h>
#include <libxml/xmlwriter.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlsave.h>
